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
  ];
  it.each(bad)('names the bad value %j %j', (flags, env, message) => {
    expect(() => loadConfig('d', flags, env)).toThrow(message);
  });

  it('reads the sandbox answer limit', () => {
    expect(loadConfig('d', {}, { UHLP_MAX_SANDBOX_RESPONSE_BYTES: '65536' }).maxSandboxResponseBytes).toBe(65536);
  });

  it('requires a definitions directory', () => {
    expect(() => loadConfig(undefined, {}, {})).toThrow(/definitions directory is required/);
  });
});
