// kinesalite_streamarn.js — preloaded into kinesalite by kinesis_bench.sh
// (NODE_OPTIONS="--require <this file>" tests/services/kinesalite start), so
// that Bento's aws_kinesis input can read from it.
//
// Bento v1.20.0 names the stream by StreamARN alone in ListShards,
// GetShardIterator and GetRecords (the field Kinesis added in 2022);
// kinesalite 3.3.3 predates it, drops the field as unknown and answers
// ListShards "Either NextToken or StreamName should be provided".  This
// shim copies the ARN's stream name (arn:aws:kinesis:REGION:ACCOUNT:stream/
// NAME) into StreamName when a request has StreamARN and no StreamName,
// before kinesalite checks the request's fields.  Nothing else changes: zx,
// which sends StreamName, meets the same emulator.  It does nothing in any
// process but kinesalite's serve.js (npm, run by the same service script,
// inherits NODE_OPTIONS too).
'use strict'
const path = require('path')
const main = process.argv[1] || ''
if (path.basename(main) === 'serve.js' && process.env.KINESALITE_HOME) {
  const v = require(path.join(process.env.KINESALITE_HOME, 'node_modules', 'kinesalite',
                              'validations'))
  const checkTypes = v.checkTypes
  v.checkTypes = function (data, types) {
    if (data && typeof data.StreamARN === 'string' && data.StreamName == null) {
      const at = data.StreamARN.lastIndexOf(':stream/')
      if (at >= 0)
        data.StreamName = data.StreamARN.slice(at + ':stream/'.length)
    }
    return checkTypes.call(this, data, types)
  }
}
