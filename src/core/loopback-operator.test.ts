import { describe, expect, it } from 'vitest';
import { anotherSite, isLocalHost, isLoopback } from './loopback-operator.js';

const request = (remoteAddress: string, headers: Record<string, string> = {}) => ({ socket: { remoteAddress }, headers: { host: '127.0.0.1:8080', ...headers } }) as never;

describe('the loopback operator', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['10.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['2001:db8::1', false],
    ['128.0.0.1', false],
  ])('%s is loopback: %s', (address, loopback) => {
    expect(isLoopback(address)).toBe(loopback);
  });

  it.each([
    [{}, undefined],
    [{ 'sec-fetch-site': 'none' }, undefined],
    [{ 'sec-fetch-site': 'same-origin', origin: 'http://127.0.0.1:8080' }, undefined],
    [{ 'sec-fetch-site': 'cross-site' }, 'Sec-Fetch-Site is cross-site'],
    [{ 'sec-fetch-site': 'same-site' }, 'Sec-Fetch-Site is same-site'],
    [{ origin: 'https://evil.example' }, "Origin https://evil.example is not this core's"],
    [{ origin: 'null' }, "Origin null is not this core's"],
    [{ origin: 'http://127.0.0.1:8081' }, "Origin http://127.0.0.1:8081 is not this core's"],
  ])('a request with %j comes from another site: %s', (headers, why) => {
    expect(anotherSite(request('127.0.0.1', headers))).toBe(why);
  });

  // DNS rebinding: a page of rebind.example whose name now resolves to 127.0.0.1 sends Host: rebind.example:P.
  it.each([
    ['127.0.0.1:8081', true],
    ['127.0.0.1', true],
    ['127.9.8.7:1', true],
    ['[::1]:8081', true],
    ['localhost:8081', true],
    ['LOCALHOST', true],
    ['console.example.com:443', true],
    ['rebind.example:8081', false],
    ['rebind.example', false],
    ['10.0.0.1:8081', false],
    ['[2001:db8::1]:8081', false],
    ['localhost.rebind.example:8081', false],
    ['localhost.:8081', false],
    ['127.0.0.1.nip.io:8081', false],
    ['', false],
    ['127.0.0.1:8081@evil', false],
    [undefined, false],
  ])('the Host %s names this machine: %s', (host, local) => {
    expect(isLocalHost(host, ['console.example.com'])).toBe(local);
  });
});
