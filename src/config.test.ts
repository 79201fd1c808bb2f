import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostEnvironment, loadConfig, loadLedgerPruneEnv, loadOperatorEnv, loadStateTarget } from './config.js';

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
    [{}, { UHLP_LLM_STREAM: 'yes' }, /UHLP_LLM_STREAM must be one of true, false, got "yes"/],
    [{}, { UHLP_LLM_STRUCTURED_OUTPUT: 'guided' }, /UHLP_LLM_STRUCTURED_OUTPUT must be one of json_schema, json_object, none, got "guided"/],
    [{}, { UHLP_LLM_TIMEOUT_MS: '10' }, /UHLP_LLM_TIMEOUT_MS must be an integer 100-600000, got "10"/],
    [{}, { UHLP_LLM_MAX_RETRIES: '-1' }, /UHLP_LLM_MAX_RETRIES must be an integer 0-10/],
  ];
  it.each(bad)('names the bad value %j %j', (flags, env, message) => {
    expect(() => loadConfig('d', flags, env)).toThrow(message);
  });

  it('takes a Sentinel state URL and names UHLP_STATE when it is malformed', () => {
    expect(loadConfig('d', {}, { UHLP_STATE: 'redis+sentinel://s1:26379,s2:26379/uhlp' }).state).toBe('redis+sentinel://s1:26379,s2:26379/uhlp');
    expect(() => loadConfig('d', {}, { UHLP_STATE: 'redis+sentinel://s1:26379' })).toThrow(expect.objectContaining({ code: 'UHLP_CONFIG_INVALID', message: expect.stringMatching(/^UHLP_STATE must be redis\+sentinel:/) }) as Error);
    expect(() => loadConfig('d', { state: 'redis+sentinel://s1/m?x=1' }, {})).toThrow(/^--state has an unknown parameter "x"/);
    expect(loadConfig('d', {}, { UHLP_STATE: 'redis+cluster://n1:7000,n2:7001' }).state).toBe('redis+cluster://n1:7000,n2:7001');
    expect(() => loadConfig('d', {}, { UHLP_STATE: 'redis+cluster://n1:7000', UHLP_STATE_REPLICA_ACKS: '1' })).toThrow(/^UHLP_STATE_REPLICA_ACKS must be 0 with a redis\+cluster/);
  });

  it('takes a TLS Sentinel or Cluster URL whose caFile exists, and refuses one whose caFile does not', () => {
    const ca = path.join(mkdtempSync(path.join(os.tmpdir(), 'uhlp-ca-')), 'ca.crt');
    writeFileSync(ca, '-----BEGIN CERTIFICATE-----\n');
    const url = `rediss+sentinel://s1/uhlp?caFile=${encodeURIComponent(ca)}`;
    expect(loadConfig('d', {}, { UHLP_STATE: url }).state).toBe(url);
    expect(loadConfig('d', {}, { UHLP_STATE: `rediss+cluster://n1?caFile=${ca}` }).state).toBe(`rediss+cluster://n1?caFile=${ca}`);
    expect(() => loadConfig('d', {}, { UHLP_STATE: 'rediss+sentinel://s1/uhlp?caFile=/nonexistent/ca.crt' })).toThrow(
      expect.objectContaining({ code: 'UHLP_CONFIG_INVALID', message: 'UHLP_STATE must be a caFile that exists (a PEM file of CAs), got "/nonexistent/ca.crt"' }) as Error,
    );
  });

  it('reads how many replicas must hold a kept write, off by default', () => {
    expect(loadConfig('d', {}, {}).stateReplicaAcks).toEqual({ replicas: 0, timeoutMs: 1000 });
    expect(loadConfig('d', {}, { UHLP_STATE_REPLICA_ACKS: '1', UHLP_STATE_REPLICA_ACK_TIMEOUT_MS: '250' }).stateReplicaAcks).toEqual({ replicas: 1, timeoutMs: 250 });
    expect(() => loadConfig('d', {}, { UHLP_STATE_REPLICA_ACKS: '-1' })).toThrow(/^UHLP_STATE_REPLICA_ACKS must be an integer 0-16/);
    expect(() => loadConfig('d', {}, { UHLP_STATE_REPLICA_ACK_TIMEOUT_MS: '0' })).toThrow(/^UHLP_STATE_REPLICA_ACK_TIMEOUT_MS must be an integer 10-60000/);
  });

  it('reads the LLM provider settings, with offline defaults', () => {
    expect(loadConfig('d', {}, {}).llm).toEqual({ stream: false, structuredOutput: 'json_schema', timeoutMs: 60_000, maxRetries: 3, appAllowPrivate: [], models: {} });
    const llm = loadConfig('d', {}, {
      UHLP_LLM_BASE_URL: 'http://127.0.0.1:11434/v1',
      UHLP_LLM_MODEL: 'llama3.2',
      UHLP_LLM_STREAM: 'true',
      UHLP_LLM_STRUCTURED_OUTPUT: 'json_object',
      UHLP_LLM_TIMEOUT_MS: '5000',
      UHLP_LLM_MAX_RETRIES: '0',
    }).llm;
    expect(llm).toEqual({ baseUrl: 'http://127.0.0.1:11434/v1', model: 'llama3.2', stream: true, structuredOutput: 'json_object', timeoutMs: 5000, maxRetries: 0, appAllowPrivate: [], models: {} });
    expect(loadConfig('d', {}, { UHLP_LLM_ALLOW_PRIVATE: '127.0.0.1:8080,[::1]:9000' }).llm.appAllowPrivate).toEqual(['127.0.0.1:8080', '[::1]:9000']);
  });

  it('reads the map of model names', () => {
    expect(loadConfig('d', {}, {}).llm.models).toEqual({});
    expect(loadConfig('d', {}, { UHLP_LLM_MODELS: 'small=llama3.2:3b, large=qwen2.5:14b' }).llm.models).toEqual({ small: 'llama3.2:3b', large: 'qwen2.5:14b' });
    expect(() => loadConfig('d', {}, { UHLP_LLM_MODELS: 'small' })).toThrow(/UHLP_LLM_MODELS must be comma-separated name=model pairs/);
  });

  it('reads how many warm pods each pool claims ahead: 2 unless set, 0 - 16', () => {
    expect(loadConfig('d', {}, {}).pods.claimAhead).toBe(2);
    expect(loadConfig('d', {}, { UHLP_POD_CLAIM_AHEAD: '0' }).pods.claimAhead).toBe(0);
    expect(loadConfig('d', {}, { UHLP_POD_CLAIM_AHEAD: '5' }).pods.claimAhead).toBe(5);
    expect(() => loadConfig('d', {}, { UHLP_POD_CLAIM_AHEAD: '17' })).toThrow(/UHLP_POD_CLAIM_AHEAD must be an integer 0-16, got "17"/);
  });

  it("shows clients a script's stack only when asked, and only in dev mode", () => {
    expect(loadConfig('d', {}, {}).devErrorStacks).toBe(false);
    expect(loadConfig('d', {}, { UHLP_DEV_ERROR_STACKS: 'true' }).devErrorStacks).toBe(true);
    expect(loadConfig('d', {}, { UHLP_DEV_ERROR_STACKS: 'false' }, { devMode: false }).devErrorStacks).toBe(false);
    expect(() => loadConfig('d', {}, { UHLP_DEV_ERROR_STACKS: 'yes' })).toThrow(/UHLP_DEV_ERROR_STACKS/);
    expect(() => loadConfig('d', {}, { UHLP_DEV_ERROR_STACKS: 'true' }, { devMode: false })).toThrow(/outside uhlp dev/);
  });

  it('reads the sandbox answer limit', () => {
    expect(loadConfig('d', {}, { UHLP_MAX_SANDBOX_RESPONSE_BYTES: '65536' }).maxSandboxResponseBytes).toBe(65536);
  });

  it('reads the MCP package cache volume of runner: mcp pods, and the mcp-host image', () => {
    expect(loadConfig('d', {}, {}).pods.packageVolume).toBeUndefined();
    expect(loadConfig('d', {}, { UHLP_MCP_PACKAGE_VOLUME: 'pvc:mcp-packages' }).pods.packageVolume).toEqual({ claimName: 'mcp-packages' });
    expect(loadConfig('d', {}, { UHLP_MCP_PACKAGE_VOLUME: 'hostPath:/var/lib/uhlp/mcp' }).pods.packageVolume).toEqual({ hostPath: '/var/lib/uhlp/mcp' });
    expect(loadConfig('d', {}, { UHLP_IMAGE_MCP: 'uhlp/mcp-host:dev' }).pods.images).toEqual({ mcp: 'uhlp/mcp-host:dev' });
    for (const value of ['mcp-packages', 'pvc:', 'pvc:Bad_Name', 'hostPath:relative', 'hostPath:/a/../etc', 'nfs:/x']) {
      expect(() => loadConfig('d', {}, { UHLP_MCP_PACKAGE_VOLUME: value }), value).toThrow(/UHLP_MCP_PACKAGE_VOLUME must be pvc:<claim name> or hostPath:<absolute directory>/);
    }
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

  it('reads the ledger durability, segments and retention, with documented defaults', () => {
    const dev = loadConfig('d', {}, {});
    expect(dev).toMatchObject({ ledgerDurability: 'async', ledgerSegmentBytes: 64 * 1024 * 1024, ledgerSegmentSeconds: 3600, ledgerPruneIntervalSeconds: 60 });
    expect(dev.ledgerRetention).toEqual({ '*': { maxAgeMs: 24 * 3600_000, maxBytes: 2 * 1024 ** 3 } });
    expect(loadConfig('d', {}, {}, { devMode: false }).ledgerRetention).toEqual({});
    const set = loadConfig(
      'd',
      { 'ledger-durability': 'fsync', 'ledger-retention': 'production=30d/100Gi,staging=-/5G' },
      { UHLP_LEDGER_DURABILITY: 'sync', UHLP_LEDGER_SEGMENT_SIZE: '1Mi', UHLP_LEDGER_SEGMENT_SECONDS: '600', UHLP_LEDGER_PRUNE_INTERVAL_SECONDS: '0' },
    );
    expect(set).toMatchObject({ ledgerDurability: 'fsync', ledgerSegmentBytes: 1024 * 1024, ledgerSegmentSeconds: 600, ledgerPruneIntervalSeconds: 0 });
    expect(set.ledgerRetention).toEqual({ production: { maxAgeMs: 30 * 86_400_000, maxBytes: 100 * 1024 ** 3 }, staging: { maxBytes: 5e9 } });
    expect(loadConfig('d', { 'ledger-retention': 'none' }, {}).ledgerRetention).toEqual({});
    expect(loadConfig('d', {}, { UHLP_LEDGER_DURABILITY: 'sync' }).ledgerDurability).toBe('sync');
  });

  it.each([
    [{ 'ledger-durability': 'eventually' }, {}, /--ledger-durability must be one of/],
    [{}, { UHLP_LEDGER_DURABILITY: 'SYNC' }, /UHLP_LEDGER_DURABILITY must be one of/],
    [{ 'ledger-retention': 'production=forever' }, {}, /--ledger-retention \(production\)/],
    [{ 'ledger-retention': 'Prod=7d' }, {}, /--ledger-retention must be plane=maxAge\/maxSize pairs/],
    [{ 'ledger-retention': '*=7d,*=1d' }, {}, /names plane "\*" twice/],
    [{}, { UHLP_LEDGER_SEGMENT_SIZE: '1K' }, /UHLP_LEDGER_SEGMENT_SIZE must be a size of 64Ki to 4Gi/],
    [{}, { UHLP_LEDGER_SEGMENT_SIZE: 'big' }, /UHLP_LEDGER_SEGMENT_SIZE/],
    [{}, { UHLP_LEDGER_SEGMENT_SECONDS: '0' }, /UHLP_LEDGER_SEGMENT_SECONDS must be an integer 1-604800/],
  ] as Array<[Record<string, string>, Record<string, string>, RegExp]>)('refuses ledger setting %o %o with UHLP_CONFIG_INVALID', (flags, env, message) => {
    expect(() => loadConfig('d', flags, env)).toThrow(message);
    try {
      loadConfig('d', flags, env);
    } catch (error) {
      expect((error as { code: string }).code).toBe('UHLP_CONFIG_INVALID');
    }
  });

  it('requires a definitions directory', () => {
    expect(() => loadConfig(undefined, {}, {})).toThrow(/definitions directory is required/);
  });
});

describe('the environment beyond loadConfig', () => {
  it('keeps the host environment as it was given, frozen, for the processes the core starts', () => {
    const given = { PATH: '/opt/bin:/usr/bin', LANG: 'C.UTF-8', UNSET: undefined };
    const host = hostEnvironment(given);
    expect(host).toEqual({ PATH: '/opt/bin:/usr/bin', LANG: 'C.UTF-8' });
    expect(Object.isFrozen(host)).toBe(true);
    given.PATH = '/changed';
    expect(host.PATH).toBe('/opt/bin:/usr/bin');
    expect(loadConfig('d', {}, { PATH: '/opt/bin' }).hostEnv).toEqual({ PATH: '/opt/bin' });
  });

  it('gives `uhlp operator` its log level and runner images, validated as the core validates them', () => {
    expect(loadOperatorEnv({})).toEqual({ debug: false, images: {} });
    expect(loadOperatorEnv({ UHLP_LOG_LEVEL: 'debug', UHLP_IMAGE_JIT: 'uhlp/jit-runner:dev' })).toEqual({ debug: true, images: { jit: 'uhlp/jit-runner:dev' } });
    expect(() => loadOperatorEnv({ UHLP_IMAGE_LLM: 'not an image' })).toThrow(/UHLP_IMAGE_LLM must be an image reference, got "not an image"/);
  });

  it('gives `uhlp fn` the cores\' state, the flag over the variable, and their key prefix', () => {
    expect(loadStateTarget(undefined, {})).toEqual({ state: undefined, keyPrefix: 'uhlp' });
    expect(loadStateTarget('redis://a:6379', { UHLP_STATE: 'redis://b:6379', UHLP_STATE_PREFIX: 'team-1' })).toEqual({ state: 'redis://a:6379', keyPrefix: 'team-1' });
    expect(loadStateTarget(undefined, { UHLP_STATE: 'redis://b:6379' }).state).toBe('redis://b:6379');
    expect(() => loadStateTarget(undefined, { UHLP_STATE_PREFIX: 'a b' })).toThrow(/UHLP_STATE_PREFIX must be up to 64 letters/);
  });

  it('gives `uhlp ledger prune` the cores\' session life, validated as the core validates it', () => {
    expect(loadLedgerPruneEnv({})).toEqual({ sessionTtlSeconds: undefined });
    expect(loadLedgerPruneEnv({ UHLP_SESSION_TTL_SECONDS: '600' })).toEqual({ sessionTtlSeconds: 600 });
    expect(() => loadLedgerPruneEnv({ UHLP_SESSION_TTL_SECONDS: 'an hour' })).toThrow(/UHLP_SESSION_TTL_SECONDS must be an integer 1-2592000, got "an hour"/);
  });
});

describe('the secrets file setting', () => {
  // Any existing file will do: the setting is checked for existence only here.
  const file = path.resolve('package.json');
  it('is UHLP_SECRETS_FILE; the earlier UHLP_MCP_SECRETS_FILE still works for this release, marked for a warning; both at once is refused', () => {
    expect(loadConfig('d', {}, { UHLP_SECRETS_FILE: file }).mcpFederation).toMatchObject({ secretsFile: file });
    expect(loadConfig('d', {}, { UHLP_SECRETS_FILE: file }).mcpFederation.secretsFileDeprecatedName).toBeUndefined();
    expect(loadConfig('d', {}, { UHLP_MCP_SECRETS_FILE: file }).mcpFederation).toMatchObject({ secretsFile: file, secretsFileDeprecatedName: true });
    expect(() => loadConfig('d', {}, { UHLP_SECRETS_FILE: file, UHLP_MCP_SECRETS_FILE: file })).toThrow(/UHLP_MCP_SECRETS_FILE must be unset: it is the earlier name of UHLP_SECRETS_FILE/);
    expect(() => loadConfig('d', {}, { UHLP_SECRETS_FILE: '/nonexistent/secrets.yaml' })).toThrow(/UHLP_SECRETS_FILE must be an existing file/);
  });
});
