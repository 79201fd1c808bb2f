// The bundled Sentinel's start-up step (an init container on the core image: the Redis
// image has no shell). It writes the config a Redis data pod or a sentinel starts from,
// after asking the sentinels which pod is the master now, so that a pod restarted after a
// failover comes back as a replica of the new master rather than as a second master.
//
//   UHLP_REDIS_INIT_ROLE         data | sentinel
//   UHLP_REDIS_INIT_ME           this pod's DNS name (announced to the others)
//   UHLP_REDIS_INIT_FIRST        the first data pod's DNS name: the master when no sentinel names one
//   UHLP_REDIS_INIT_SENTINELS    host:port of every sentinel, comma-separated
//   UHLP_REDIS_INIT_MASTER_NAME  the name the sentinels monitor the master under
//   UHLP_REDIS_INIT_OUT          the config file to write
//   UHLP_REDIS_INIT_DOWN_AFTER_MS, UHLP_REDIS_INIT_FAILOVER_TIMEOUT_MS  (the sentinels'; a data pod waits at most
//                                twice the failover timeout to be named a replica)
//   UHLP_REDIS_INIT_PORT         the port the written config listens on (6379 data, 26379 sentinel)
//   UHLP_REDIS_INIT_REDIS_PORT   the data pods' port (6379)
//   UHLP_REDIS_INIT_PASSWORD     the data pods' password, for the sentinels (optional; the data pods get it as arguments)
//   UHLP_REDIS_INIT_TLS_DIR      a directory with tls.crt, tls.key and ca.crt (optional): the configs listen with
//                                TLS only (`port 0`, `tls-port`), replicas and sentinels reach the master with TLS,
//                                and this step asks the sentinels over TLS
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';

const env = (name, fallback) => {
  const value = process.env[name] ?? fallback;
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
};
const role = env('UHLP_REDIS_INIT_ROLE');
const me = env('UHLP_REDIS_INIT_ME');
const first = env('UHLP_REDIS_INIT_FIRST');
const masterName = env('UHLP_REDIS_INIT_MASTER_NAME');
const out = env('UHLP_REDIS_INIT_OUT');
const port = env('UHLP_REDIS_INIT_PORT');
const redisPort = env('UHLP_REDIS_INIT_REDIS_PORT', '6379');
const downAfterMs = Number(env('UHLP_REDIS_INIT_DOWN_AFTER_MS', '5000'));
const failoverTimeoutMs = Number(env('UHLP_REDIS_INIT_FAILOVER_TIMEOUT_MS', '60000'));
const tlsDir = process.env.UHLP_REDIS_INIT_TLS_DIR || undefined;
const tlsFile = (name) => path.join(tlsDir, name);
const sentinels = env('UHLP_REDIS_INIT_SENTINELS')
  .split(',')
  .map((address) => address.trim())
  // A sentinel does not ask itself (it is not up yet); a data pod is never one of them.
  .filter((address) => address !== '' && !(role === 'sentinel' && address.startsWith(`${me}:`)));

/** The bulk strings of a RESP reply, each read by its declared length (a string may hold CR or LF). */
function bulkStrings(reply) {
  const out = [];
  for (let at = reply.indexOf('$'); at !== -1; at = reply.indexOf('$', at)) {
    const head = /^\$(\d+)\r\n/.exec(reply.slice(at));
    if (!head) {
      at += 1;
      continue;
    }
    const start = at + head[0].length;
    const end = start + Number(head[1]);
    if (reply.length < end + 2) break;
    out.push(reply.slice(start, end));
    at = end + 2;
  }
  return out;
}

/** One RESP command to host:port; the reply's bulk strings, [] for a nil reply, undefined when nobody answered. */
function ask(address, args, timeoutMs = 1000) {
  const at = address.lastIndexOf(':');
  const request = `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`;
  return new Promise((resolve) => {
    const host = address.slice(0, at);
    const target = { host, port: Number(address.slice(at + 1)) };
    // With TLS the sentinel's certificate is checked against the CA, for the name dialled.
    const socket = tlsDir
      ? tls.connect({ ...target, servername: net.isIP(host) ? undefined : host, ca: readFileSync(tlsFile('ca.crt')) })
      : net.connect(target);
    let reply = '';
    const done = (value) => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(timeoutMs, () => done(undefined));
    socket.on('error', () => done(undefined));
    socket.on(tlsDir ? 'secureConnect' : 'connect', () => socket.write(request));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (/^(\*-1|_|-)/.test(reply) && reply.includes('\r\n')) return done([]);
      const count = /^\*(\d+)\r\n/.exec(reply);
      if (!count) return;
      const strings = bulkStrings(reply);
      if (strings.length >= Number(count[1])) done(strings);
    });
  });
}

/** The master the sentinels name, as { host, port }; undefined when none answers with one. */
async function namedMaster() {
  for (const sentinel of sentinels) {
    const reply = await ask(sentinel, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName]);
    // Written into the config as it is: only a host name or address and a port are taken, never a line of anything else.
    if (reply && reply.length === 2 && /^[A-Za-z0-9._:-]{1,253}$/.test(reply[0]) && /^\d{1,5}$/.test(reply[1])) return { host: reply[0], port: reply[1] };
  }
  return undefined;
}

/** Whether any sentinel knows a replica of the master (a replica holds the data set; on a fresh install none is known yet). */
async function replicasKnown() {
  for (const sentinel of sentinels) {
    const reply = await ask(sentinel, ['SENTINEL', 'REPLICAS', masterName]);
    if (reply && reply.length > 0) return true;
  }
  return false;
}

/** How the written config listens: on `port`, or with TLS alone there (the sentinels and replicas reach each other with TLS). */
function listenLines() {
  if (!tlsDir) return [`port ${port}`];
  return [
    'port 0',
    `tls-port ${port}`,
    `tls-cert-file ${tlsFile('tls.crt')}`,
    `tls-key-file ${tlsFile('tls.key')}`,
    `tls-ca-cert-file ${tlsFile('ca.crt')}`,
    // Clients show no certificate: the password, when set, admits them, as without TLS.
    'tls-auth-clients no',
    'tls-replication yes',
  ];
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const isMe = (master) => master !== undefined && master.host === me && master.port === port;

/**
 * Named master but just restarted, with an empty data directory: coming back as master would
 * hand the replicas an empty data set (they follow the name, and sync in full from it). While
 * this pod is not up, the sentinels see the master down and promote a replica (down-after, then
 * their election): this pod waits to be named a replica, however long that takes on a loaded
 * node. It does not force a failover itself: a forced one on one sentinel can race the
 * sentinels' own and promote a second replica. On a fresh install no replica is known yet, and
 * nobody holds data: this pod starts as master.
 */
async function handOver(named) {
  if (!(await replicasKnown())) return named;
  const deadline = Date.now() + 2 * failoverTimeoutMs;
  while (Date.now() < deadline) {
    await sleep(Math.min(1000, downAfterMs));
    // No sentinel answering now is no reason to start empty: wait on.
    const master = await namedMaster();
    if (master !== undefined && !isMe(master)) return master;
  }
  throw new Error(`the sentinels still name ${me} master after ${2 * failoverTimeoutMs} ms: not starting empty over the replicas' data`);
}

async function dataConfig() {
  let master = await namedMaster();
  if (isMe(master)) master = await handOver(master);
  master ??= { host: first, port: redisPort };
  const replicaOf = isMe(master) ? undefined : master;
  return [
    ...listenLines(),
    'bind * -::*',
    'dir /data',
    // Acknowledged writes survive a restart, and the master refuses writes no replica takes (docs/runtime-state.md#sentinel).
    'appendonly yes',
    'save ""',
    'min-replicas-to-write 1',
    'min-replicas-max-lag 10',
    // A replica that must sync in full after a failover starts at once, not after Redis's default 5 s (docs/runtime-state.md).
    'repl-diskless-sync-delay 0',
    // The pod's DNS name, not its IP: an IP changes with each pod, the name stays.
    `replica-announce-ip ${me}`,
    ...(replicaOf === undefined ? [] : [`replicaof ${replicaOf.host} ${replicaOf.port}`]),
  ];
}

async function sentinelConfig() {
  const master = (await namedMaster())?.host ?? first;
  return [
    ...listenLines(),
    'bind * -::*',
    'dir /data',
    'sentinel resolve-hostnames yes',
    'sentinel announce-hostnames yes',
    `sentinel announce-ip ${me}`,
    `sentinel monitor ${masterName} ${master} ${redisPort} 2`,
    `sentinel down-after-milliseconds ${masterName} ${downAfterMs}`,
    `sentinel failover-timeout ${masterName} ${failoverTimeoutMs}`,
    `sentinel parallel-syncs ${masterName} 1`,
    ...(process.env.UHLP_REDIS_INIT_PASSWORD ? [`sentinel auth-pass ${masterName} ${process.env.UHLP_REDIS_INIT_PASSWORD}`] : []),
  ];
}

if (role === 'sentinel' && existsSync(out)) {
  // A restarted sentinel keeps what it learnt (it rewrites its own file): the master, the replicas, the other sentinels.
  console.log(`redis-sentinel-init: keeping ${out}`);
} else {
  const lines = role === 'data' ? await dataConfig() : role === 'sentinel' ? await sentinelConfig() : undefined;
  if (!lines) throw new Error(`UHLP_REDIS_INIT_ROLE must be data or sentinel, got ${role}`);
  writeFileSync(out, `${lines.join('\n')}\n`, { mode: 0o600 });
  console.log(`redis-sentinel-init: wrote ${out} (${lines.find((line) => /replicaof|monitor/.test(line)) ?? 'master'})`);
}
