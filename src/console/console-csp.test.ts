import { describe, expect, it } from 'vitest';
import { consolePageCsp, sandboxPageCsp } from './console-csp.js';

describe("the console page's policy", () => {
  it('runs only its own files, frames only the sandbox origin, and is framed by nobody', () => {
    const policy = consolePageCsp('http://127.0.0.1:9001');
    expect(policy).toContain("script-src 'self'");
    expect(policy).not.toContain('unsafe-inline');
    expect(policy).not.toContain('unsafe-eval');
    expect(policy).toContain('frame-src http://127.0.0.1:9001');
    expect(policy).toContain("frame-ancestors 'none'");
  });
});

describe("a view's sandbox page policy (MCP Apps)", () => {
  it("is the extension's restrictive default when the resource declares nothing", () => {
    const policy = sandboxPageCsp(undefined, ['http://127.0.0.1:*']);
    for (const directive of ["default-src 'none'", "script-src 'self' 'unsafe-inline'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:", "media-src 'self' data:", "connect-src 'none'", "frame-src 'none'", "object-src 'none'", "base-uri 'none'"]) {
      expect(policy).toContain(directive);
    }
    expect(policy).toContain('frame-ancestors http://127.0.0.1:*');
  });

  it('adds exactly the declared origins, each to its directives', () => {
    const policy = sandboxPageCsp({ connectDomains: ['https://api.example.com'], resourceDomains: ['https://*.cdn.example.com'], frameDomains: ['https://player.example.com'], baseUriDomains: ['https://base.example.com'] }, []);
    expect(policy).toContain('connect-src https://api.example.com');
    expect(policy).toContain("script-src 'self' 'unsafe-inline' https://*.cdn.example.com");
    expect(policy).toContain("img-src 'self' data: https://*.cdn.example.com");
    expect(policy).toContain('frame-src https://player.example.com');
    expect(policy).toContain('base-uri https://base.example.com');
    expect(policy).toContain("frame-ancestors 'none'");
  });

  it('never lets a value that is not an origin into the policy (a keyword, a second directive)', () => {
    const policy = sandboxPageCsp({ connectDomains: ["https://a.example.com; script-src 'unsafe-eval'", "'unsafe-eval'", '*', 'https://ok.example.com'] }, []);
    expect(policy).toContain('connect-src https://ok.example.com;');
    expect(policy).not.toContain('unsafe-eval');
    expect(policy.split(';').filter((part) => part.trim().startsWith('script-src'))).toHaveLength(1);
  });
});
