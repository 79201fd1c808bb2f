import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { commandFailure } from './redis-observer.js';

describe('commandFailure', () => {
  it.each([
    [new ReplyError('READONLY You can\'t write against a read only replica.'), 'unavailable'],
    [new ReplyError('NOREPLICAS Not enough good replicas to write.'), 'unavailable'],
    [new ReplyError('LOADING Redis is loading the dataset in memory'), 'unavailable'],
    [new ReplyError('ERR wrong number of arguments'), 'reply'],
    [new ReplyError('WRONGTYPE Operation against a key holding the wrong kind of value'), 'reply'],
    [new Error('Command timed out'), 'timeout'],
    [new Error("Stream isn't writeable and enableOfflineQueue options is false"), 'connection'],
    [new Error('Connection is closed.'), 'connection'],
    ['not an error', 'connection'],
  ] as const)('%s is %s', (error, failure) => {
    expect(commandFailure(error)).toBe(failure);
  });
});
