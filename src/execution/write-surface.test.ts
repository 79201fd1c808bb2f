import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isSettled, SETTLED_MS } from '../shared/work-tree-walk.js';
import { createWorkTree, type WorkTree } from '../sandbox/work-tree.js';
import { surfaceMatches, TurnWriteSurface, workspaceDirs } from './write-surface.js';

const SID = 'SES-20261122T000000000Z-ABCDEFGHJKMNPQRSTVWX';
const OTHER = 'SES-20261122T000000000Z-0123456789ABCDEFGHJK';

function tree(): WorkTree & { root: string } {
  const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-ws-'));
  const { hostDir } = createWorkTree(root, 's1');
  return { root, hostDir, sandboxDir: '/work' };
}

function write(work: WorkTree, relative: string, content = 'x'): void {
  const file = path.join(work.hostDir, relative);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, content);
}

describe('TurnWriteSurface', () => {
  it('makes the turn directories, and finds nothing after a turn that wrote nothing', async () => {
    const work = tree();
    const surface = TurnWriteSurface.begin(work, SID);
    expect(workspaceDirs(SID)).toEqual({ tmpDir: `tmp/${SID}`, outputDir: `output/${SID}` });
    expect(existsSync(path.join(work.hostDir, 'tmp', SID))).toBe(true);
    expect(existsSync(path.join(work.hostDir, 'output', SID))).toBe(true);
    const check = await surface.check([]);
    expect(check).toEqual({ realized: [], undeclared: [], missing: [] });
    expect(surfaceMatches(check)).toBe(true);
    await surface.discard();
    // Kept for the session's next turn.
    expect(readdirSync(path.join(work.hostDir, 'tmp'))).toEqual([SID]);
  });

  it('hashes every file, matches declarations (globs for scratch), and publishes the declared outputs', async () => {
    const work = tree();
    const outputs = mkdtempSync(path.join(os.tmpdir(), 'uhlp-out-'));
    const surface = TurnWriteSurface.begin(work, SID);
    write(work, `output/${SID}/report.json`, '{"total":42}');
    write(work, `tmp/${SID}/a/b/scratch.txt`, 'scratch');
    const check = await surface.check([
      { path: 'output/report.json', role: 'report' },
      { path: 'tmp/**', role: 'scratch' },
    ]);
    const sha = (text: string): string => `sha256:${execFileSync('sha256sum', { input: text }).toString().split(' ')[0]}`;
    expect(check.realized).toEqual([
      { path: 'tmp/a/b/scratch.txt', hash: sha('scratch'), size: 7, kind: 'file' },
      { path: 'output/report.json', hash: sha('{"total":42}'), size: 12, kind: 'file' },
    ]);
    expect(surfaceMatches(check)).toBe(true);
    const kept = await surface.publish(check, outputs);
    expect(kept).toEqual([{ path: 'output/report.json', hash: sha('{"total":42}') }]);
    expect(readFileSync(path.join(outputs, SID, 'report.json'), 'utf8')).toBe('{"total":42}');
    // The tree is empty again, the session's directories kept.
    expect(readdirSync(path.join(work.hostDir, 'tmp', SID))).toEqual([]);
    expect(readdirSync(path.join(work.hostDir, 'output', SID))).toEqual([]);
  });

  it('reports undeclared and missing writes, strays outside the turn directories included', async () => {
    const work = tree();
    const surface = TurnWriteSurface.begin(work, SID);
    write(work, `output/${SID}/extra.txt`);
    write(work, 'tmp/stray.txt');
    write(work, `output/${OTHER}/theirs.txt`);
    const check = await surface.check([{ path: 'output/report.json', role: 'report' }]);
    expect([...check.undeclared].sort()).toEqual(['output/extra.txt', `output/${OTHER}/theirs.txt`, 'tmp/stray.txt'].sort());
    expect(check.missing).toEqual(['output/report.json']);
    expect(surfaceMatches(check)).toBe(false);
    await surface.discard();
    expect(readdirSync(path.join(work.hostDir, 'tmp'))).toEqual([SID]);
    expect(readdirSync(path.join(work.hostDir, 'output'))).toEqual([SID]);
  });

  it('never follows a link or opens what is not a regular file', async () => {
    const work = tree();
    const outside = mkdtempSync(path.join(os.tmpdir(), 'uhlp-outside-'));
    writeFileSync(path.join(outside, 'secret'), 'host secret');
    const surface = TurnWriteSurface.begin(work, SID);
    symlinkSync(path.join(outside, 'secret'), path.join(work.hostDir, 'output', SID, 'report.json'));
    symlinkSync(outside, path.join(work.hostDir, 'tmp', SID, 'dir-link'));
    execFileSync('mkfifo', [path.join(work.hostDir, 'tmp', SID, 'pipe')]);
    const check = await surface.check([{ path: 'output/report.json', role: 'report' }, { path: 'tmp/**', role: 'scratch' }]);
    expect(check.realized).toEqual(
      expect.arrayContaining([
        { path: 'output/report.json', size: 0, kind: 'symlink' },
        { path: 'tmp/dir-link', size: 0, kind: 'symlink' },
        { path: 'tmp/pipe', size: 0, kind: 'fifo' },
      ]),
    );
    expect([...check.undeclared].sort()).toEqual(['output/report.json (symlink)', 'tmp/dir-link (symlink)', 'tmp/pipe (fifo)']);
    // A declared path that is a link is not the file that was declared.
    expect(check.missing).toEqual([]);
    await surface.discard();
    expect(readFileSync(path.join(outside, 'secret'), 'utf8')).toBe('host secret');
  });

  it('lets turns of one session that share a runner check their directories once, when the last one ends', async () => {
    const work = tree();
    const first = TurnWriteSurface.begin(work, SID);
    const second = TurnWriteSurface.begin(work, SID);
    write(work, `tmp/${SID}/one.txt`);
    expect(await first.check([])).toEqual({ realized: [], undeclared: [], missing: [] });
    await first.discard();
    expect(existsSync(path.join(work.hostDir, 'tmp', SID, 'one.txt'))).toBe(true);
    const last = await second.check([]);
    expect(last.undeclared).toEqual(['tmp/one.txt']);
    await second.discard();
    expect(readdirSync(path.join(work.hostDir, 'tmp', SID))).toEqual([]);
  });

  it('finds writes at the root of the tree, beside tmp/ and output/, and leaves none for the next session', async () => {
    const work = tree();
    const surface = TurnWriteSurface.begin(work, SID);
    write(work, 'left.txt', 'for the next session');
    write(work, 'nest/deep.txt');
    mkdirSync(path.join(work.hostDir, 'empty'));
    const check = await surface.check([{ path: 'tmp/**', role: 'scratch' }]);
    expect([...check.undeclared].sort()).toEqual(['left.txt', 'nest/deep.txt']);
    expect(surfaceMatches(check)).toBe(false);
    await surface.discard();
    expect(readdirSync(work.hostDir).sort()).toEqual(['output', 'tmp']);
    // The next session's turn finds a clean tree.
    const next = TurnWriteSurface.begin(work, OTHER);
    expect(await next.check([])).toEqual({ realized: [], undeclared: [], missing: [] });
  });

  it('finds a top directory replaced by a file, and makes it again', async () => {
    const work = tree();
    const surface = TurnWriteSurface.begin(work, SID);
    rmSync(path.join(work.hostDir, 'tmp'), { recursive: true });
    writeFileSync(path.join(work.hostDir, 'tmp'), 'not a directory');
    const check = await surface.check([]);
    expect(check.undeclared).toEqual(['tmp']);
    await surface.discard();
    const next = TurnWriteSurface.begin(work, OTHER);
    expect(existsSync(path.join(work.hostDir, 'tmp', OTHER))).toBe(true);
    expect(await next.check([])).toEqual({ realized: [], undeclared: [], missing: [] });
  });

  it("finds writes in a side directory, keeps what the driver put there, and names them as the sandbox does", async () => {
    const work = tree();
    const socketDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-side-'));
    writeFileSync(path.join(socketDir, 'runner.sock'), '');
    const side: WorkTree = { ...work, sideDirs: [{ hostDir: socketDir, sandboxDir: '/run/uhlp', keep: ['runner.sock'] }] };
    const surface = TurnWriteSurface.begin(side, SID);
    writeFileSync(path.join(socketDir, 'note.txt'), 'for the next session');
    const check = await surface.check([]);
    expect(check.undeclared).toEqual(['/run/uhlp/note.txt']);
    await surface.discard();
    expect(readdirSync(socketDir)).toEqual(['runner.sock']);
  });

  it('walks a session directory replaced by a link as a link, never through it', async () => {
    const work = tree();
    const outside = mkdtempSync(path.join(os.tmpdir(), 'uhlp-outside-'));
    writeFileSync(path.join(outside, 'secret'), 'host secret');
    symlinkSync(outside, path.join(work.hostDir, 'output', OTHER));
    const surface = TurnWriteSurface.begin(work, SID);
    const check = await surface.check([]);
    expect(check.undeclared).toEqual([`output/${OTHER} (symlink)`]);
    await surface.discard();
    expect(readFileSync(path.join(outside, 'secret'), 'utf8')).toBe('host secret');
  });

  describe('once the tree has settled', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    /** A tree whose directories changed long enough ago, as the walk's clock sees it, and a clean turn that recorded their stamps. */
    async function settledTree(sideDir?: string): Promise<WorkTree> {
      const work = tree();
      const walked: WorkTree = sideDir === undefined ? work : { ...work, sideDirs: [{ hostDir: sideDir, sandboxDir: '/run/uhlp', keep: ['runner.sock'] }] };
      const first = TurnWriteSurface.begin(walked, SID);
      // A fresh stamp is never trusted: a write in the kernel's same tick would not move it.
      expect(await first.check([])).toEqual({ realized: [], undeclared: [], missing: [] });
      await first.discard();
      expect(isSettled(walked, SID)).toBe(false);
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + SETTLED_MS * 5);
      const second = TurnWriteSurface.begin(walked, SID);
      expect(await second.check([])).toEqual({ realized: [], undeclared: [], missing: [] });
      await second.discard();
      expect(isSettled(walked, SID)).toBe(true);
      return walked;
    }

    const writes: Array<{ name: string; make: (work: WorkTree, side: string) => void; undeclared: string }> = [
      { name: 'a file in the session directory', make: (w) => write(w, `tmp/${SID}/a.txt`), undeclared: 'tmp/a.txt' },
      { name: 'an output', make: (w) => write(w, `output/${SID}/b.txt`), undeclared: 'output/b.txt' },
      { name: 'a file at the root', make: (w) => write(w, 'root.txt'), undeclared: 'root.txt' },
      { name: "another session's directory", make: (w) => write(w, `tmp/${OTHER}/c.txt`), undeclared: `tmp/${OTHER}/c.txt` },
      { name: 'a file in a side directory', make: (_w, side) => writeFileSync(path.join(side, 'note.txt'), 'x'), undeclared: '/run/uhlp/note.txt' },
      {
        name: 'a file whose directory had its times put back',
        make: (w) => {
          const dir = path.join(w.hostDir, 'tmp', SID);
          const before = statSync(dir, { bigint: true }).mtimeNs;
          write(w, `tmp/${SID}/hidden.txt`);
          // To the nanosecond: only the change time tells.
          execFileSync('touch', ['-m', '-d', `@${before / 1_000_000_000n}.${String(before % 1_000_000_000n).padStart(9, '0')}`, dir]);
          expect(statSync(dir, { bigint: true }).mtimeNs).toBe(before);
        },
        undeclared: 'tmp/hidden.txt',
      },
    ];

    it.each(writes)('still finds $name', async ({ make, undeclared }) => {
      const side = mkdtempSync(path.join(os.tmpdir(), 'uhlp-side-'));
      writeFileSync(path.join(side, 'runner.sock'), '');
      const work = await settledTree(side);
      const surface = TurnWriteSurface.begin(work, SID);
      make(work, side);
      const check = await surface.check([]);
      expect(check.undeclared).toEqual([undeclared]);
      await surface.discard();
      expect(isSettled(work, SID)).toBe(false);
      // Emptied: the next turn finds a clean tree again.
      const next = TurnWriteSurface.begin(work, SID);
      expect(await next.check([])).toEqual({ realized: [], undeclared: [], missing: [] });
      await next.discard();
    });

    it("is not taken by another session's turn", async () => {
      const work = await settledTree();
      const other = TurnWriteSurface.begin(work, OTHER);
      write(work, `tmp/${SID}/left.txt`);
      const check = await other.check([]);
      expect(check.undeclared).toEqual([`tmp/${SID}/left.txt`]);
      await other.discard();
    });
  });
});
