import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';

describe('loadConfig', () => {
  it('has documented defaults and is frozen', () => {
    const config = loadConfig('defs', {}, {});
    expect(config).toMatchObject({ host: '127.0.0.1', port: 8080, driver: 'process', bodyLimitBytes: 1048576, maxSandboxResponseBytes: 8388608, logLevel: 'info' });
    expect(config.definitionsDir).toBe(path.resolve('defs'));
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('takes flags over environment variables', () => {
    expect(loadConfig('d', { port: '9000' }, { UHLP_PORT: '9100' }).port).toBe(9000);
    expect(loadConfig('d', {}, { UHLP_PORT: '9100' }).port).toBe(9100);
  });

  const bad: Array<[Record<string, string>, Record<string, string>, RegExp]> = [
    [{ port: 'http' }, {}, /--port must be an integer 0-65535, got "http"/],
    [{}, { UHLP_PORT: '70000' }, /UHLP_PORT must be an integer 0-65535, got "70000"/],
    [{ 'log-level': 'loud' }, {}, /--log-level must be one of/],
    [{ driver: 'vm' }, {}, /--driver must be one of/],
    [{}, { UHLP_BODY_LIMIT_BYTES: '-1' }, /UHLP_BODY_LIMIT_BYTES must be an integer/],
    [{}, { UHLP_MAX_SANDBOX_RESPONSE_BYTES: '8MiB' }, /UHLP_MAX_SANDBOX_RESPONSE_BYTES must be an integer 1024-268435456, got "8MiB"/],
    [{}, { UHLP_MAX_SANDBOX_RESPONSE_BYTES: '100' }, /UHLP_MAX_SANDBOX_RESPONSE_BYTES must be an integer 1024-268435456, got "100"/],
    [{}, { UHLP_MAX_SANDBOX_RESPONSE_BYTES: '1073741824' }, /UHLP_MAX_SANDBOX_RESPONSE_BYTES must be an integer/],
    [{ pull: '--upload-pack=touch /tmp/x' }, {}, /--pull must be a remote name or URL \(not starting with "-"/],
    [{}, { UHLP_GIT_PULL_REMOTE: '-uoption' }, /UHLP_GIT_PULL_REMOTE must be a remote name or URL/],
  ];
  it.each(bad)('names the bad value %j %j', (flags, env, message) => {
    expect(() => loadConfig('d', flags, env)).toThrow(message);
  });

  it('reads the sandbox answer limit', () => {
    expect(loadConfig('d', {}, { UHLP_MAX_SANDBOX_RESPONSE_BYTES: '65536' }).maxSandboxResponseBytes).toBe(65536);
  });

  it('reads the Git source guard settings: allowed private host:port pairs and a CA file', () => {
    expect(loadConfig('d', {}, {}).gitSources).toEqual({ allowPrivate: [] });
    const config = loadConfig('d', {}, { UHLP_GIT_ALLOW_PRIVATE: ' Git.Internal:443, 127.0.0.1:8443,[::1]:9443 ', UHLP_GIT_CA_FILE: 'package.json' });
    expect(config.gitSources).toEqual({ allowPrivate: ['git.internal:443', '127.0.0.1:8443', '[::1]:9443'], caFile: path.resolve('package.json') });
    for (const value of ['git.internal', '127.0.0.1:0', 'a b:1', '[zz]:1', 'host:99999', '-x:1']) {
      expect(() => loadConfig('d', {}, { UHLP_GIT_ALLOW_PRIVATE: value }), value).toThrow(/UHLP_GIT_ALLOW_PRIVATE must be comma-separated host:port pairs/);
    }
    expect(() => loadConfig('d', {}, { UHLP_GIT_CA_FILE: '/nonexistent/ca.pem' })).toThrow(/UHLP_GIT_CA_FILE must be an existing PEM file/);
  });

  it('reads the ledger key, and refuses one too short to be a key', () => {
    expect(loadConfig('d', {}, {}).ledgerKey).toBeUndefined();
    expect(loadConfig('d', {}, { UHLP_LEDGER_KEY: 'k'.repeat(32) }).ledgerKey?.id).toMatch(/^[0-9a-f]{16}$/);
    expect(() => loadConfig('d', {}, { UHLP_LEDGER_KEY: 'k'.repeat(31) })).toThrow(/UHLP_LEDGER_KEY must hold a ledger key of 32-4096 bytes/);
  });

  it('requires a definitions directory', () => {
    expect(() => loadConfig(undefined, {}, {})).toThrow(/definitions directory is required/);
  });
});
