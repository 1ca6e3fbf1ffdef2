// Run kinesalite (a Kinesis emulator, npm) on 127.0.0.1 only: its own CLI
// listens on every interface.  Usage: node serve.js PORT [kinesalite options as JSON]
'use strict'
const path = require('path')
const port = parseInt(process.argv[2], 10)
if (!(port > 0 && port < 65536)) {
  console.error('serve.js: a port 1..65535 is needed')
  process.exit(2)
}
const opts = process.argv[3] ? JSON.parse(process.argv[3]) : {}
const kinesalite = require(path.join(process.env.KINESALITE_HOME, 'node_modules', 'kinesalite'))
const server = kinesalite(opts).listen(port, '127.0.0.1', () => {
  const a = server.address()
  console.log(`Listening at http://${a.address}:${a.port}`)
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
