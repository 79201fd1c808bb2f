import { describe, expect, it } from 'vitest';
import { machineGlobalNpmrc, npmEnvironment } from './npm-environment.js';

/** A file system of these paths only; every path is its own realpath but the links given. */
function fs(files: string[], links: Record<string, string> = {}): { exists: (file: string) => boolean; realpath: (file: string) => string } {
  const set = new Set(files);
  return { exists: (file) => set.has(file) || file in links, realpath: (file) => links[file] ?? file };
}

describe('the environment npm installs packages with', () => {
  it('passes what reaching the registry takes, and nothing else of the core', () => {
    const passed = {
      PATH: '/usr/bin',
      HOME: '/root',
      TMPDIR: '/tmp',
      HTTPS_PROXY: 'http://proxy:3128',
      no_proxy: 'localhost',
      NODE_EXTRA_CA_CERTS: '/etc/ssl/corp.pem',
      SSL_CERT_FILE: '/etc/ssl/certs/ca-certificates.crt',
      SSL_CERT_DIR: '/etc/ssl/certs',
      npm_config_registry: 'https://npm.corp.example/',
      NPM_CONFIG_CAFILE: '/etc/ssl/corp.pem',
      // Named by UHLP_MCP_NPM_ENV.
      NPM_TOKEN: 'npm-secret',
    };
    const env = npmEnvironment({ ...passed, UHLP_LLM_API_KEY: 'sk-secret', UHLP_SOURCES_KEY: 'key', AWS_SECRET_ACCESS_KEY: 'aws' }, { extra: ['NPM_TOKEN'], ...fs([]) });
    expect(env).toMatchObject(passed);
    expect(Object.keys(env).filter((name) => /UHLP|AWS/.test(name))).toEqual([]);
  });

  it('fails fast on an unreachable registry unless the operator set the fetch settings', () => {
    expect(npmEnvironment({ PATH: '' }, fs([]))).toMatchObject({ npm_config_fetch_retries: '1', npm_config_fetch_retry_mintimeout: '1000', npm_config_fetch_timeout: '60000' });
    const own = npmEnvironment({ PATH: '', NPM_CONFIG_FETCH_RETRIES: '5' }, fs([]));
    expect(own.NPM_CONFIG_FETCH_RETRIES).toBe('5');
    expect(own.npm_config_fetch_retries).toBeUndefined();
  });

  it("gives npm the machine's global npmrc when the Node it runs on has none beside it", () => {
    // The pinned Node first on PATH, the machine's after it (its npmrc holds the cafile).
    const machine = fs(['/cache/node-24/bin/node', '/usr/bin/node', '/usr/etc/npmrc']);
    expect(npmEnvironment({ PATH: '/cache/node-24/bin:/usr/local/bin:/usr/bin' }, machine).npm_config_globalconfig).toBe('/usr/etc/npmrc');
    // The operator's own choice wins.
    expect(npmEnvironment({ PATH: '/cache/node-24/bin:/usr/bin', NPM_CONFIG_GLOBALCONFIG: '/etc/npmrc' }, machine).npm_config_globalconfig).toBeUndefined();
  });

  it.each([
    ['npm finds its own (the first Node has one)', '/usr/bin:/cache/bin', ['/usr/bin/node', '/usr/etc/npmrc', '/cache/bin/node', '/etc/npmrc'], {}, undefined],
    ['no Node on PATH has one', '/cache/bin:/usr/bin', ['/cache/bin/node', '/usr/bin/node'], {}, undefined],
    ['a later Node has one', '/cache/bin:/opt/node/bin', ['/cache/bin/node', '/opt/node/bin/node', '/opt/node/etc/npmrc'], {}, '/opt/node/etc/npmrc'],
    ['a linked Node: its real prefix', '/cache/bin:/usr/local/bin', ['/cache/bin/node', '/opt/n/etc/npmrc'], { '/usr/local/bin/node': '/opt/n/bin/node' }, '/opt/n/etc/npmrc'],
    ['directories without a Node are passed over', '/sbin::/cache/bin:/bin:/usr/bin', ['/cache/bin/node', '/usr/bin/node', '/usr/etc/npmrc'], {}, '/usr/etc/npmrc'],
  ] as const)('%s', (_, pathList, files, links, expected) => {
    const { exists, realpath } = fs([...files], links);
    expect(machineGlobalNpmrc(pathList, exists, realpath)).toBe(expected);
  });
});
