// Run kinesalite (a Kinesis emulator, npm) on 127.0.0.1 only: its own CLI
// listens on every interface.  Usage: node serve.js PORT [kinesalite options as JSON]
//
// Test-only, off by default: expired shard iterators, which kinesalite
// never answers on its own (its iterators live 5 minutes, as Kinesis's do).
// With ZX_KINESALITE_CONTROL=1 in the environment, GetRecords calls go
// through a hook before kinesalite, and two control paths answer:
//   POST /__zx/expire  body {"every": N, "hold": true|false} (either key):
//       every: from now, every Nth GetRecords call (counted from this
//       request; 0: none) is answered as real Kinesis answers an iterator
//       past its 5 minutes, without reaching kinesalite: HTTP 400,
//       {"__type":"ExpiredIteratorException","message":"Iterator expired. ..."};
//       hold: while true, every GetRecords call is answered so (whatever
//       its iterator, old or new), so records put meanwhile are read only
//       after the release, through an iterator asked for during the hold:
//       a reader renewing from LATEST would skip them.
//       Answers the counters below.
//   GET /__zx/calls  {"every", "hold", "get_records": calls seen,
//       "expired": calls answered expired, "iterators": the last 100000
//       GetShardIterator requests [{"n": its order among all the calls
//       above, "ms": when (ms since 1970), "stream", "shard", "type",
//       "seq"}]}.
// ZX_KINESALITE_EXPIRE_EVERY=N sets `every` from the start (and turns the
// hook on).  Unset, neither is installed: kinesalite answers every request
// as it always does.
'use strict'
const path = require('path')
const { PassThrough } = require('stream')
const port = parseInt(process.argv[2], 10)
if (!(port > 0 && port < 65536)) {
  console.error('serve.js: a port 1..65535 is needed')
  process.exit(2)
}
const opts = process.argv[3] ? JSON.parse(process.argv[3]) : {}
const kinesalite = require(path.join(process.env.KINESALITE_HOME, 'node_modules', 'kinesalite'))
const server = kinesalite(opts)

const everyEnv = process.env.ZX_KINESALITE_EXPIRE_EVERY
if (process.env.ZX_KINESALITE_CONTROL === '1' || everyEnv !== undefined) {
  const every = parseInt(everyEnv || '0', 10)
  if (!(every >= 0)) {
    console.error('serve.js: ZX_KINESALITE_EXPIRE_EVERY is not a whole number >= 0')
    process.exit(2)
  }
  hook(server, every)
}

server.listen(port, '127.0.0.1', () => {
  const a = server.address()
  console.log(`Listening at http://${a.address}:${a.port}`)
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))

// Put the expiry hook and the control paths before kinesalite's handler.
function hook (srv, every) {
  const state = { every, hold: false, since: 0, calls: 0, expired: 0, iterators: [] }
  const inner = srv.listeners('request')
  srv.removeAllListeners('request')
  const pass = (req, res) => inner.forEach(f => f.call(srv, req, res))
  srv.on('request', (req, res) => {
    if (req.url.startsWith('/__zx/')) return control(state, req, res)
    const target = String(req.headers['x-amz-target'] || '')
    if (target.endsWith('.GetRecords')) {
      state.calls++
      state.since++
      if (state.hold || (state.every > 0 && state.since % state.every === 0)) {
        state.expired++
        req.resume()
        return expiredAnswer(res)
      }
      return pass(req, res)
    }
    if (!target.endsWith('.GetShardIterator')) return pass(req, res)
    // read the body to note the request, then hand kinesalite a copy
    const chunks = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      try {
        const q = JSON.parse(body.toString('utf8'))
        state.iterators.push({ n: state.calls, ms: Date.now(),
          stream: q.StreamName || q.StreamARN || null, shard: q.ShardId || null,
          type: q.ShardIteratorType || null, seq: q.StartingSequenceNumber || null })
        if (state.iterators.length > 100000) state.iterators.shift()
      } catch (e) { /* kinesalite answers the malformed body itself */ }
      const copy = new PassThrough()
      copy.headers = req.headers
      copy.method = req.method
      copy.url = req.url
      pass(copy, res)
      copy.end(body)
    })
  })
}

function expiredAnswer (res) {
  const now = new Date()
  const made = new Date(now.getTime() - 300001)
  const body = JSON.stringify({
    __type: 'ExpiredIteratorException',
    message: `Iterator expired. The iterator was created at time ${made.toUTCString()} ` +
      `while right now it is ${now.toUTCString()} which is further in the future than the ` +
      'tolerated delay of 300000 milliseconds.'
  })
  res.statusCode = 400
  res.setHeader('Content-Type', 'application/x-amz-json-1.1')
  res.setHeader('Content-Length', Buffer.byteLength(body))
  res.end(body)
}

function control (state, req, res) {
  const chunks = []
  req.on('data', c => chunks.push(c))
  req.on('end', () => {
    const send = (code, obj) => {
      const body = JSON.stringify(obj)
      res.statusCode = code
      res.setHeader('Content-Type', 'application/json')
      res.setHeader('Content-Length', Buffer.byteLength(body))
      res.end(body)
    }
    const counters = () => ({ every: state.every, hold: state.hold, get_records: state.calls,
      expired: state.expired, iterators: state.iterators })
    if (req.method === 'GET' && req.url === '/__zx/calls') return send(200, counters())
    if (req.method !== 'POST' || req.url !== '/__zx/expire')
      return send(404, { error: 'POST /__zx/expire or GET /__zx/calls' })
    let q
    try {
      q = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}')
    } catch (e) {
      return send(400, { error: 'the body is not JSON: ' + e.message })
    }
    if ('every' in q) {
      if (!(Number.isInteger(q.every) && q.every >= 0))
        return send(400, { error: 'every: a whole number >= 0' })
      state.every = q.every
      state.since = 0
    }
    if ('hold' in q) state.hold = !!q.hold
    send(200, counters())
  })
}
