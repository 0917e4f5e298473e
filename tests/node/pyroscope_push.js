// pyroscope_push.js SERVER_URL APP — Pyroscope's Node.js client
// (@pyroscope/nodejs, from npm) profiles a few JS functions with known
// names for about 4 s and pushes wall (with CPU time) and heap profiles to
// SERVER_URL/ingest, tagged region=eu-test and team=hotspur, flushing every
// 1.5 s and once more at stop(). Used by tests/integration/server_pyroscope.sh.
'use strict';
const Pyroscope = require('@pyroscope/nodejs');

const [server, app] = process.argv.slice(2);
if (!server || !app) {
  console.error('usage: node pyroscope_push.js SERVER_URL APP');
  process.exit(2);
}

Pyroscope.init({
  serverAddress: server,
  appName: app,
  tags: { region: 'eu-test', team: 'hotspur' },
  flushIntervalMs: 1500,
  wall: { collectCpuTime: true, samplingDurationMs: 1500 },
});
Pyroscope.start();

function hotspurFib(n) {
  return n < 2 ? n : hotspurFib(n - 1) + hotspurFib(n - 2);
}

const kept = [];
function hotspurAllocate() {
  // something for the heap profile to see
  kept.push(new Array(20000).fill(kept.length));
  if (kept.length > 200) kept.shift();
}

function hotspurBusyChunk(ms) {
  const end = Date.now() + ms;
  let x = 0;
  while (Date.now() < end) {
    x += hotspurFib(18);
    hotspurAllocate();
  }
  return x;
}

const until = Date.now() + 4000;
let sink = 0;
function step() {
  sink += hotspurBusyChunk(20); // short chunks: the profiler's timers still run
  if (Date.now() < until) {
    setImmediate(step);
    return;
  }
  Pyroscope.stop().then(
    () => {
      console.log(`pushed (sink ${sink % 10})`);
    },
    (e) => {
      console.error(`stop failed: ${e}`);
      process.exit(1);
    },
  );
}
step();
