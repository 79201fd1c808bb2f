import { describe, expect, it } from 'vitest';
import { isRedisUrl, parseRedisUrl, redactUrl } from './redis-url.js';

describe('parseRedisUrl', () => {
  it('passes a single-node URL through as it is', () => {
    expect(parseRedisUrl('redis://:pw@127.0.0.1:6379/2')).toEqual({ kind: 'node', url: 'redis://:pw@127.0.0.1:6379/2' });
    expect(parseRedisUrl('rediss://redis.example:6380')).toEqual({ kind: 'node', url: 'rediss://redis.example:6380' });
  });

  it('reads sentinels, master name, db and credentials from a redis+sentinel:// URL', () => {
    expect(parseRedisUrl('redis+sentinel://app:p%40ss@s1.example:26379,10.0.0.2:26380,[::1]:26381/mymaster/3?sentinelPassword=s%26cret&sentinelUsername=watch')).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's1.example', port: 26379 },
        { host: '10.0.0.2', port: 26380 },
        { host: '::1', port: 26381 },
      ],
      masterName: 'mymaster',
      db: 3,
      username: 'app',
      password: 'p@ss',
      sentinelUsername: 'watch',
      sentinelPassword: 's&cret',
      tls: false,
    });
  });

  it('reads TLS, the server name and a CA file from a rediss+sentinel:// URL', () => {
    expect(parseRedisUrl('rediss+sentinel://:pw@s1,s2:26380/mymaster?servername=redis.example&caFile=%2Fetc%2Fuhlp%2Fredis-ca%2Fca.crt')).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26380 },
      ],
      masterName: 'mymaster',
      db: 0,
      tls: true,
      servername: 'redis.example',
      caFile: '/etc/uhlp/redis-ca/ca.crt',
      password: 'pw',
    });
    expect(parseRedisUrl('rediss+cluster://n1?caFile=/ca.pem')).toEqual({ kind: 'cluster', nodes: [{ host: 'n1', port: 6379 }], tls: true, caFile: '/ca.pem' });
  });

  it('defaults the port to 26379 and the db to 0; takes a password without a user', () => {
    expect(parseRedisUrl('redis+sentinel://:pw@sentinel/uhlp/')).toEqual({ kind: 'sentinel', sentinels: [{ host: 'sentinel', port: 26379 }], masterName: 'uhlp', db: 0, tls: false, password: 'pw' });
  });

  it('reads seed nodes, credentials and TLS from a redis+cluster:// URL', () => {
    expect(parseRedisUrl('redis+cluster://app:p%40ss@n1.example:7000,10.0.0.2,[::1]:7002')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'n1.example', port: 7000 },
        { host: '10.0.0.2', port: 6379 },
        { host: '::1', port: 7002 },
      ],
      tls: false,
      username: 'app',
      password: 'p@ss',
    });
    expect(parseRedisUrl('rediss+cluster://:pw@n1:6380/?servername=redis.example')).toEqual({
      kind: 'cluster',
      nodes: [{ host: 'n1', port: 6380 }],
      tls: true,
      servername: 'redis.example',
      password: 'pw',
    });
  });

  it.each([
    ['redis+cluster://', 'must be redis+cluster://'],
    ['redis+cluster://n1:7000/0', 'must be redis+cluster://'],
    ['redis+cluster://n1:7000,/', 'cluster node address'],
    ['redis+cluster://n1:0', 'cluster node port outside'],
    ['redis+cluster://bad_host', 'cluster node host'],
    ['redis+cluster://user@n1', 'without a password'],
    ['redis+cluster://n1?servername=x', 'servername without TLS'],
    ['redis+cluster://n1?caFile=/ca.pem', 'caFile without TLS (use rediss+cluster://)'],
    ['rediss+cluster://n1?caFile=ca.pem', 'caFile that is not an absolute path'],
    ['rediss+cluster://n1?servername=-x-', 'servername that is not a host name'],
    ['rediss+cluster://n1?db=1', 'unknown parameter "db"'],
    ['redis+cluster://:pw%0d%0aFLUSHALL@n1', 'control character'],
  ])('refuses the Cluster URL %s', (url, problem) => {
    expect(() => parseRedisUrl(url, 'UHLP_STATE')).toThrow(expect.objectContaining({ code: 'UHLP_CONFIG_INVALID', message: expect.stringContaining(problem) }) as Error);
  });

  it.each([
    ['localhost:6379', 'must be a redis://'],
    ['memcached://a:1', 'must be a redis://'],
    ['redis+sentinel://', 'must be redis+sentinel://'],
    ['redis+sentinel://s1:26379', 'must be redis+sentinel://'],
    ['redis+sentinel://s1:26379/', 'must be redis+sentinel://'],
    ['redis+sentinel://s1:26379,/m', 'sentinel address'],
    ['redis+sentinel://s1:0/m', 'port outside'],
    ['redis+sentinel://s1:99999/m', 'port outside'],
    ['redis+sentinel://s1:26379:1/m', 'sentinel address'],
    ['redis+sentinel://-bad-/m', 'sentinel host'],
    ['redis+sentinel://a_b/m', 'sentinel host'],
    ['redis+sentinel://[zz::1]:26379/m', 'sentinel host'],
    ['redis+sentinel://s1/m%20x', 'master name'],
    ['redis+sentinel://s1/m%0d%0aSHUTDOWN', 'control character'],
    ['redis+sentinel://s1/%E0%A4%A', 'percent-encoding'],
    ['redis+sentinel://s1/m/x', 'database number'],
    ['redis+sentinel://s1/m/70000', 'database number'],
    ['redis+sentinel://s1/m/1/extra', 'must be redis+sentinel://'],
    ['redis+sentinel://user@s1/m', 'without a password'],
    ['redis+sentinel://s1/m?password=x', 'unknown parameter "password"'],
    ['redis+sentinel://s1/m?sentinelPassword', 'without a value'],
    ['redis+sentinel://s1/m?sentinelPassword=a&sentinelPassword=b', 'twice'],
    ['redis+sentinel://s1/m#frag', 'must be redis+sentinel://'],
    ['redis+sentinel://s1/m?caFile=/ca.pem', 'caFile without TLS (use rediss+sentinel://)'],
    ['redis+sentinel://s1/m?servername=redis.example', 'servername without TLS (use rediss+sentinel://)'],
    ['rediss+sentinel://s1/m?servername=a..b', 'servername that is not a host name'],
    ['rediss+sentinel://s1/m?caFile=..%2Fetc%2Fca', 'caFile that is not an absolute path'],
    ['rediss+sentinel://s1', 'must be redis+sentinel://'],
    ['redisss+sentinel://s1/m', 'must be a redis://'],
  ])('refuses %s with UHLP_CONFIG_INVALID naming the setting', (url, problem) => {
    expect(() => parseRedisUrl(url, 'UHLP_STATE')).toThrow(expect.objectContaining({ code: 'UHLP_CONFIG_INVALID', message: expect.stringMatching(new RegExp(`^UHLP_STATE .*${problem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`)) }) as Error);
  });

  it('never repeats a password in its message', () => {
    try {
      parseRedisUrl('redis+sentinel://u:topsecret@s1/m?sentinelPassword=alsosecret&bogus=1', 'UHLP_STATE');
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).not.toMatch(/topsecret|alsosecret/);
      expect((error as Error).message).toContain('u:***@');
    }
  });

  it('tells the three forms from anything else', () => {
    expect(isRedisUrl('redis+sentinel://s/m')).toBe(true);
    expect(isRedisUrl('rediss+sentinel://s/m')).toBe(true);
    expect(isRedisUrl('redis+cluster://n1:7000')).toBe(true);
    expect(isRedisUrl('rediss+cluster://n1:7000')).toBe(true);
    expect(redactUrl('redis+cluster://u:pw@n1:7000,n2:7001')).toBe('redis+cluster://u:***@n1:7000,n2:7001');
    expect(isRedisUrl('redis://h')).toBe(true);
    expect(isRedisUrl('memory')).toBe(false);
    expect(redactUrl('redis://:pw@h:1')).toBe('redis://:***@h:1');
  });
});
