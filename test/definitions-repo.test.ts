/** Definitions come from commits of a real Git repository, never from the working tree. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDefinitionsRepo } from '../src/definitions/definitions-repo.js';
import { silentLogger } from '../src/logger.js';
import { createMetrics } from '../src/metrics.js';
import { ApplicationRegistry } from '../src/registry/application-registry.js';

const APP = `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: demo }
spec:
  pools: [{ name: p, minWarm: 0 }]
  components: [{ id: c, handler: JIT, pool: p, jit: { script: scripts/c.js } }]
  routes: [{ http: { method: GET, path: /c }, component: c }]
`;

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' }).trim();
}

function writeApp(root: string): void {
  mkdirSync(path.join(root, 'apps/demo/scripts'), { recursive: true });
  writeFileSync(path.join(root, 'apps/demo/app.yaml'), APP);
  writeFileSync(path.join(root, 'apps/demo/scripts/c.js'), 'export default () => 1;\n');
}

function tmp(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

function registryFor(repo: Awaited<ReturnType<typeof openDefinitionsRepo>>, revisionsRoot: string): ApplicationRegistry {
  return new ApplicationRegistry({ repo, revisionsRoot, metrics: createMetrics({ defaultMetrics: false }), logger: silentLogger() });
}

describe('definitions repository', () => {
  it('git-inits a plain directory and commits its content', async () => {
    const dir = tmp('uhlp-plain-');
    writeApp(dir);
    const repo = await openDefinitionsRepo(dir);
    expect(git(dir, 'log', '--format=%s')).toBe('Initial definitions');
    const snapshot = await registryFor(repo, tmp('uhlp-rev-')).load();
    expect([...snapshot.apps.keys()]).toEqual(['demo']);
  });

  it('reads the committed revision, not uncommitted edits, and materializes it read-only once', async () => {
    const dir = tmp('uhlp-repo-');
    git(dir, 'init', '-q');
    writeApp(dir);
    git(dir, 'add', '-A');
    git(dir, 'commit', '-qm', 'first');
    writeFileSync(path.join(dir, 'apps/demo/app.yaml'), 'not: [valid');
    const revisions = tmp('uhlp-rev-');
    const repo = await openDefinitionsRepo(dir);
    const snapshot = await registryFor(repo, revisions).load();
    expect(snapshot.problems).toEqual([]);
    const head = git(dir, 'rev-parse', 'HEAD');
    expect(snapshot.revision).toBe(head);
    expect(readFileSync(path.join(revisions, head, 'apps/demo/app.yaml'), 'utf8')).toBe(APP);
  });

  it('takes apps from a subdirectory of a larger repository', async () => {
    const top = tmp('uhlp-mono-');
    git(top, 'init', '-q');
    writeApp(path.join(top, 'deploy/defs'));
    git(top, 'add', '-A');
    git(top, 'commit', '-qm', 'defs in a subdirectory');
    const repo = await openDefinitionsRepo(path.join(top, 'deploy/defs'));
    expect(repo.prefix).toBe('deploy/defs/');
    const snapshot = await registryFor(repo, tmp('uhlp-rev-')).load();
    expect([...snapshot.apps.keys()]).toEqual(['demo']);
  });

  it('never writes symlinks from the tree, so a script cannot point outside its revision', async () => {
    const dir = tmp('uhlp-link-');
    git(dir, 'init', '-q');
    writeApp(dir);
    symlinkSync('/etc/passwd', path.join(dir, 'apps/demo/scripts/passwd.js'));
    git(dir, 'add', '-A');
    git(dir, 'commit', '-qm', 'with a symlink');
    const revisions = tmp('uhlp-rev-');
    const repo = await openDefinitionsRepo(dir);
    const revision = await repo.materialize(git(dir, 'rev-parse', 'HEAD'), revisions);
    expect(revision.skipped).toEqual(['apps/demo/scripts/passwd.js']);
    expect(existsSync(path.join(revision.dir, 'apps/demo/scripts/passwd.js'))).toBe(false);
  });

  it('refuses a repository without a commit, naming it', async () => {
    const dir = tmp('uhlp-empty-');
    git(dir, 'init', '-q');
    await expect(openDefinitionsRepo(dir)).rejects.toMatchObject({ code: 'UHLP_DEFINITIONS_UNREADABLE', message: expect.stringMatching(/no commit yet/) });
  });

  it('reports a YAML syntax error with its line, and keeps loading other apps', async () => {
    const dir = tmp('uhlp-yaml-');
    writeApp(dir);
    mkdirSync(path.join(dir, 'apps/bad'), { recursive: true });
    writeFileSync(path.join(dir, 'apps/bad/app.yaml'), 'apiVersion: x\nspec: [unclosed\n');
    const repo = await openDefinitionsRepo(dir);
    const snapshot = await registryFor(repo, tmp('uhlp-rev-')).load();
    expect([...snapshot.apps.keys()]).toEqual(['demo']);
    expect(snapshot.problems).toEqual([{ file: 'apps/bad/app.yaml', path: '/', reason: expect.stringMatching(/^YAML line \d+ column \d+: /) }]);
  });
});
