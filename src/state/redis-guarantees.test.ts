import { describe, expect, it } from 'vitest';
import { guaranteeFindings } from './redis-guarantees.js';

const codes = (...args: Parameters<typeof guaranteeFindings>): string[] => guaranteeFindings(...args).map((finding) => finding.code);
const durable = { appendonly: 'yes', appendfsync: 'always', minReplicasToWrite: 1, connectedReplicas: 2 };

describe('guaranteeFindings', () => {
  it.each([
    ['a durable Sentinel master with replica acks', durable, true, 1, []],
    ['a durable single node', { ...durable, minReplicasToWrite: 0, connectedReplicas: 0 }, false, 0, []],
    ['no append-only file', { ...durable, appendonly: 'no' }, false, 0, ['UHLP_STATE_NOT_PERSISTED']],
    ['fsync every second', { ...durable, appendfsync: 'everysec' }, false, 0, ['UHLP_STATE_FSYNC_RELAXED']],
    ['Sentinel without replica acks', durable, true, 0, ['UHLP_STATE_REPLICA_ACKS_OFF']],
    ['Sentinel without min-replicas-to-write', { ...durable, minReplicasToWrite: 0 }, true, 1, ['UHLP_STATE_MIN_REPLICAS_OFF']],
    ['more replica acks than replicas', { ...durable, connectedReplicas: 1 }, true, 2, ['UHLP_STATE_REPLICAS_SHORT']],
    ['settings it could not read', { unreadable: 'ERR unknown command' }, true, 0, ['UHLP_STATE_UNCHECKED']],
  ])('%s', (_name, settings, sentinel, replicas, expected) => {
    expect(codes(settings, { sentinel, replicaAcks: { replicas } })).toEqual(expected);
  });
});
