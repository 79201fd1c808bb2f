import { describe, expect, it } from 'vitest';
import { hostPort, refusedAddress, resolveHost } from './address-guard.js';

const v4 = (address: string): { address: string; family: number } => ({ address, family: 4 });
const v6 = (address: string): { address: string; family: number } => ({ address, family: 6 });

describe('the address guard', () => {
  it.each<[string, number, Array<{ address: string; family: number }>, string[], string | undefined]>([
    ['public name', 443, [v4('93.184.216.34')], [], undefined],
    ['loopback', 443, [v4('127.0.0.1')], [], 'loopback'],
    ['IPv6 loopback', 443, [v6('::1')], [], 'loopback'],
    ['metadata', 80, [v4('169.254.169.254')], [], 'cloud-metadata'],
    ['one private address among public ones', 443, [v4('93.184.216.34'), v4('10.0.0.7')], [], 'private'],
    ['IPv4-mapped loopback', 443, [v6('::ffff:127.0.0.1')], [], 'loopback'],
    ['loopback allowed by name and port', 8443, [v4('127.0.0.1')], ['git.test:8443'], undefined],
    ['loopback allowed by name, other port', 8444, [v4('127.0.0.1')], ['git.test:8443'], 'loopback'],
    ['metadata through an allowed name', 80, [v4('169.254.169.254')], ['git.test:80'], 'cloud-metadata'],
    ['metadata allowed as an address', 80, [v4('169.254.169.254')], ['169.254.169.254:80'], undefined],
    ['IPv6 loopback allowed as an address', 9443, [v6('::1')], ['[::1]:9443'], undefined],
  ])('%s', (_name, port, addresses, allow, refusedClass) => {
    expect(refusedAddress('Git.Test.', port, addresses, allow)?.addressClass).toBe(refusedClass);
  });

  it('resolves IP literals to themselves and names through the lookup', async () => {
    expect(await resolveHost('[::1]', () => Promise.reject(new Error('no lookup for literals')))).toEqual([v6('::1')]);
    expect(await resolveHost('git.test', (name) => Promise.resolve(name === 'git.test' ? [v4('127.0.0.1')] : []))).toEqual([v4('127.0.0.1')]);
    expect(hostPort('::1', 443)).toBe('[::1]:443');
  });
});
