import { describe, expect, it } from 'vitest';
import { npmReason } from './package-cache.js';

describe("npm's reason for a failed install", () => {
  it.each([
    [
      'a registry that refuses the connection',
      [
        'npm error code ECONNREFUSED',
        'npm error syscall connect',
        'npm error errno ECONNREFUSED',
        'npm error FetchError: request to http://127.0.0.1:9/x failed, reason: connect ECONNREFUSED 127.0.0.1:9',
        'npm error     at ClientRequest.<anonymous> (/usr/lib/node_modules/npm/node_modules/minipass-fetch/lib/index.js:130:14)',
        'npm error   code: \'ECONNREFUSED\',',
        'npm error }',
        'npm error',
        "npm error If you are behind a proxy, please make sure that the 'proxy' config is set properly.  See: 'npm help config'",
        'npm error A complete log of this run can be found in: /root/.npm/_logs/x-debug-0.log',
      ],
      'code ECONNREFUSED: FetchError: request to http://127.0.0.1:9/x failed, reason: connect ECONNREFUSED 127.0.0.1:9',
    ],
    ['a version the registry does not have', ['npm error code E404', 'npm error 404 No match found for version 2099.1.1', 'npm error 404'], 'code E404: 404 No match found for version 2099.1.1'],
    ['a CA the machine trusts and npm does not', ['npm error code SELF_SIGNED_CERT_IN_CHAIN', 'npm error errno SELF_SIGNED_CERT_IN_CHAIN', 'npm error request to https://registry.npmjs.org/x failed, reason: self-signed certificate in certificate chain'], 'code SELF_SIGNED_CERT_IN_CHAIN: request to https://registry.npmjs.org/x failed, reason: self-signed certificate in certificate chain'],
    ['an older npm', ['npm ERR! code E403', 'npm ERR! 403 Forbidden'], 'code E403: 403 Forbidden'],
    ['nothing npm said', [''], undefined],
  ])('%s', (_, lines, expected) => {
    expect(npmReason(lines.join('\n'))).toBe(expected);
  });
});
