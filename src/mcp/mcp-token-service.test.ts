import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers/wait-for.js';
import { UhlpError } from '../shared/errors.js';
import { type ExecutionGrant, type GrantBinding, McpTokenService, bearerToken } from './mcp-token-service.js';

const binding = (appId: string): GrantBinding => ({
  appId,
  componentId: 'c',
  requestId: `r-${appId}`,
  revision: 'abc1234',
  capabilities: { kv: { prefixes: ['ctr:'], ops: ['get'] } },
  configuration: { greeting: appId },
});

let service: McpTokenService | undefined;
afterEach(() => service?.close());

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return error instanceof UhlpError ? error.code : 'not-a-uhlp-error';
  }
  return undefined;
}

describe('McpTokenService', () => {
  it('binds each token to its own app, component, request and revision', () => {
    service = new McpTokenService();
    const a = service.mint(binding('app-a'), 10_000);
    const b = service.mint(binding('app-b'), 10_000);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^uhlp_mcp_[A-Za-z0-9_-]{43}$/);
    expect(service.resolve(a)).toMatchObject({ appId: 'app-a', componentId: 'c', requestId: 'r-app-a', revision: 'abc1234', configuration: { greeting: 'app-a' } });
    expect(service.resolve(b).appId).toBe('app-b');
  });

  it('refuses missing, unknown, revoked and expired tokens with UHLP_MCP_UNAUTHORIZED', () => {
    let now = 1_000;
    const dropped: ExecutionGrant[] = [];
    service = new McpTokenService({ now: () => now, onDrop: (grant) => dropped.push(grant) });
    expect(codeOf(() => service!.resolve(undefined))).toBe('UHLP_MCP_UNAUTHORIZED');
    expect(codeOf(() => service!.resolve('uhlp_mcp_guess'))).toBe('UHLP_MCP_UNAUTHORIZED');

    const revoked = service.mint(binding('a'), 5_000);
    expect(service.revoke(revoked)?.appId).toBe('a');
    expect(codeOf(() => service!.resolve(revoked))).toBe('UHLP_MCP_UNAUTHORIZED');
    expect(service.revoke(revoked)).toBeUndefined();

    const expiring = service.mint(binding('b'), 5_000);
    now += 4_999;
    expect(service.resolve(expiring).appId).toBe('b');
    now += 1;
    expect(codeOf(() => service!.resolve(expiring))).toBe('UHLP_MCP_UNAUTHORIZED');
    expect(dropped.map((grant) => grant.appId)).toEqual(['a', 'b']);
    expect(service.size()).toBe(0);
  });

  it('drops expired grants on its sweep even when nobody asks for them', async () => {
    let now = 0;
    const dropped: string[] = [];
    service = new McpTokenService({ now: () => now, sweepIntervalMs: 5, onDrop: (grant) => dropped.push(grant.appId) });
    service.mint(binding('short'), 10);
    service.mint(binding('long'), 1_000_000);
    now = 100;
    await waitFor(() => dropped.length > 0, { what: 'the sweep to drop a grant' });
    expect(dropped).toEqual(['short']);
    expect(service.size()).toBe(1);
  });

  it('reads the bearer token of an Authorization header only', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer   abc ')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(bearerToken('Bearer a b')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });
});
