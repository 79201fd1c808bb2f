/** Definitions come from commits of a real Git repository, never from the working tree. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDefinitionsRepo } from '../src/apps/git/definitions-repo.js';
import { silentLogger } from '../src/logger.js';
import { createMetrics } from '../src/metrics.js';
import { ApplicationRegistry } from '../src/apps/application-registry.js';

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
    expect(readFileSync(path.join(revisions, 'demo', head, 'app.yaml'), 'utf8')).toBe(APP);
    expect(statSync(path.join(revisions, 'demo', head, 'app.yaml')).mode & 0o777).toBe(0o444);
    // Once: a second load of the same commit writes nothing (the directory is only renamed into place complete).
    const again = await repo.materialize(head, revisions);
    expect(again.apps).toEqual([{ name: 'demo', dir: path.join(revisions, 'demo', head) }]);
    expect(readdirSync(path.join(revisions, 'demo'))).toEqual([head]);
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
    expect(existsSync(path.join(revision.apps[0]!.dir, 'scripts/passwd.js'))).toBe(false);
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

  it('writes each app to a directory of its own, so a sandbox can mount one app and no other', async () => {
    const dir = tmp('uhlp-two-');
    writeApp(dir);
    mkdirSync(path.join(dir, 'apps/other'), { recursive: true });
    writeFileSync(path.join(dir, 'apps/other/app.yaml'), APP.replace('name: demo', 'name: other'));
    mkdirSync(path.join(dir, 'apps/other/scripts'), { recursive: true });
    writeFileSync(path.join(dir, 'apps/other/scripts/c.js'), 'export default () => 2;\n');
    mkdirSync(path.join(dir, 'apps/Bad_Name'), { recursive: true });
    writeFileSync(path.join(dir, 'apps/Bad_Name/app.yaml'), APP);
    const revisions = tmp('uhlp-rev-');
    const repo = await openDefinitionsRepo(dir);
    const snapshot = await registryFor(repo, revisions).load();
    expect([...snapshot.apps.keys()].sort()).toEqual(['demo', 'other']);
    expect(readdirSync(revisions).sort()).toEqual(['demo', 'other']);
    expect(readdirSync(path.join(revisions, 'demo', snapshot.revision)).sort()).toEqual(['app.yaml', 'scripts']);
    expect(snapshot.problems).toContainEqual({ file: 'apps/Bad_Name/app.yaml', path: '/', reason: expect.stringMatching(/not an app id/) });
  });

  describe('a reload judges apps one by one', () => {
    function twoApps(): { dir: string; repo: Promise<Awaited<ReturnType<typeof openDefinitionsRepo>>> } {
      const dir = tmp('uhlp-reload-');
      git(dir, 'init', '-q');
      writeApp(dir);
      mkdirSync(path.join(dir, 'apps/other/scripts'), { recursive: true });
      writeFileSync(path.join(dir, 'apps/other/app.yaml'), APP.replace('name: demo', 'name: other'));
      writeFileSync(path.join(dir, 'apps/other/scripts/c.js'), 'export default () => 2;\n');
      git(dir, 'add', '-A');
      git(dir, 'commit', '-qm', 'two apps');
      return { dir, repo: openDefinitionsRepo(dir) };
    }

    it('serves a fix of one app while another app of the same repository is invalid', async () => {
      const { dir, repo } = twoApps();
      writeFileSync(path.join(dir, 'apps/other/app.yaml'), 'spec: [broken');
      git(dir, 'commit', '-qam', 'break other');
      const registry = registryFor(await repo, tmp('uhlp-rev-'));
      const first = await registry.load();
      expect([...first.apps.keys()]).toEqual(['demo']);

      writeFileSync(path.join(dir, 'apps/demo/scripts/c.js'), 'export default () => 3;\n');
      const fix = (git(dir, 'commit', '-qam', 'change demo only'), git(dir, 'rev-parse', 'HEAD'));
      const second = await registry.load();
      expect(second.revision).toBe(fix);
      expect(second.apps.get('demo')!.revision).toBe(fix);
      expect(second.apps.has('other')).toBe(false);
      expect(second.heldBack).toEqual([]);
    });

    it('keeps an app that a new commit breaks at the revision it was last valid at, and says so', async () => {
      const { dir, repo } = twoApps();
      const good = git(dir, 'rev-parse', 'HEAD');
      const metrics = createMetrics({ defaultMetrics: false });
      const registry = new ApplicationRegistry({ repo: await repo, revisionsRoot: tmp('uhlp-rev-'), metrics, logger: silentLogger() });
      await registry.load();

      writeFileSync(path.join(dir, 'apps/other/app.yaml'), APP.replace('name: demo', 'name: other').replace('minWarm: 0', 'minWarm: many'));
      writeFileSync(path.join(dir, 'apps/demo/scripts/c.js'), 'export default () => 4;\n');
      const bad = (git(dir, 'commit', '-qam', 'break other, change demo'), git(dir, 'rev-parse', 'HEAD'));
      const snapshot = await registry.load();
      expect(snapshot.revision).toBe(bad);
      expect(snapshot.apps.get('demo')!.revision).toBe(bad);
      expect(snapshot.apps.get('other')!.revision).toBe(good);
      expect(snapshot.heldBack).toEqual([
        { app: 'other', servingRevision: good, problems: [expect.objectContaining({ file: 'apps/other/app.yaml', path: '/spec/pools/0/minWarm' })] },
      ]);
      // Listed once, with the held-back app: /readyz and the console read both lists.
      expect(snapshot.problems).toEqual([]);
      const text = await metrics.registry.metrics();
      expect(text).toMatch(/uhlp_definition_errors 1/);
      expect(text).toMatch(/uhlp_definition_apps_held_back 1/);
      expect(text).toMatch(/uhlp_definition_reloads_total\{outcome="held-back"\} 1/);

      // Fixed: served at the new HEAD again, and no longer held back.
      writeFileSync(path.join(dir, 'apps/other/app.yaml'), APP.replace('name: demo', 'name: other'));
      const fixed = (git(dir, 'commit', '-qam', 'fix other'), git(dir, 'rev-parse', 'HEAD'));
      const after = await registry.load();
      expect(after.apps.get('other')!.revision).toBe(fixed);
      expect(after.heldBack).toEqual([]);
      expect(await metrics.registry.metrics()).toMatch(/uhlp_definition_apps_held_back 0/);
    });

    it('drops an app whose directory a commit removes, rather than holding it', async () => {
      const { dir, repo } = twoApps();
      const registry = registryFor(await repo, tmp('uhlp-rev-'));
      await registry.load();
      rmSync(path.join(dir, 'apps/other'), { recursive: true });
      git(dir, 'add', '-A');
      git(dir, 'commit', '-qm', 'remove other');
      const snapshot = await registry.load();
      expect([...snapshot.apps.keys()]).toEqual(['demo']);
      expect(snapshot.heldBack).toEqual([]);
    });
  });
});
