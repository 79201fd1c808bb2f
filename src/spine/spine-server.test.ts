import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers/wait-for.js';
import { UhlpError } from '../shared/errors.js';
import { LineSplitter } from './json-lines.js';
import { type SpineClient, createSpineClient } from './spine-client.js';
import { newSpineSecret } from './spine-secret.js';
import { type SpineServer, createSpineServer } from './spine-server.js';

const SECRET = newSpineSecret();

/** A bare socket speaking JSON lines, to send what a well-behaved client never would. */
class RawPeer {
  private readonly lines: unknown[] = [];
  private readonly waiters: Array<() => void> = [];
  constructor(readonly socket: net.Socket) {
    const splitter = new LineSplitter(1 << 20);
    socket.on('data', (chunk: Buffer) => {
      for (const line of splitter.push(chunk).lines) this.lines.push(JSON.parse(line));
      for (const wake of this.waiters.splice(0)) wake();
    });
  }
  static async connect(path: string): Promise<RawPeer> {
    const socket = net.connect(path);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return new RawPeer(socket);
  }
  send(text: string): void {
    this.socket.write(text);
  }
  async next(timeoutMs = 2000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    while (this.lines.length === 0) {
      if (Date.now() > deadline) throw new Error('no line within deadline');
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return this.lines.shift() as Record<string, unknown>;
  }
  close(): void {
    this.socket.destroy();
  }
}

async function rejection(promise: Promise<unknown>): Promise<UhlpError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(UhlpError);
    return error as UhlpError;
  }
  throw new Error('expected a rejection');
}

describe('spine server and client', () => {
  let dir: string;
  let socketPath: string;
  let server: SpineServer;
  let exits: number;
  let refusals: UhlpError[];
  const clients: SpineClient[] = [];
  const peers: RawPeer[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'uhlp-spine-'));
    socketPath = join(dir, 'core.sock');
    exits = 0;
    refusals = [];
    server = createSpineServer({ socketPath, secret: SECRET, onExit: () => (exits += 1), maxLineBytes: 4096, onProtocolError: (error) => refusals.push(error) });
    await server.listen();
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
    for (const peer of peers.splice(0)) peer.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  function client(): SpineClient {
    const made = createSpineClient({ socketPath, initialReconnectDelayMs: 20, maxReconnectDelayMs: 100 });
    clients.push(made);
    return made;
  }

  async function peer(): Promise<RawPeer> {
    const made = await RawPeer.connect(socketPath);
    peers.push(made);
    return made;
  }

  it('relays an invocation to the registered handler and returns its result', async () => {
    const host = client();
    host.handle('tool.echo', 'cap.test', async (payload, context) => ({
      outcome: 'applied',
      referenceId: `ref-${context.invocationId}`,
      observation: { echoed: payload },
    }));
    host.start();
    await host.ready(2000);
    const result = await server.invoke('tool.echo', 'cap.test', { text: 'hi' }, { timeoutMs: 2000 });
    expect(result.outcome).toBe('applied');
    expect(result.observation).toEqual({ echoed: { text: 'hi' } });
    expect(result.referenceId).toBe(`ref-${result.invocationId}`);
  });

  it('answers UHLP_ENDPOINT_UNAVAILABLE at once for a route nobody serves', async () => {
    const started = Date.now();
    const error = await rejection(server.invoke('tool.none', 'cap.none', {}, { timeoutMs: 10_000 }));
    expect(error.code).toBe('UHLP_ENDPOINT_UNAVAILABLE');
    expect(error.statusCode).toBe(503);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('fails pending invocations with UHLP_ENDPOINT_UNAVAILABLE when the host disconnects, and the route goes away', async () => {
    const host = client();
    let started = 0;
    host.handle('tool.hang', 'cap.test', () => {
      started += 1;
      return new Promise(() => {});
    });
    host.start();
    await host.ready(2000);
    const pending = rejection(server.invoke('tool.hang', 'cap.test', {}, { timeoutMs: 10_000 }));
    await waitFor(() => started === 1, { what: 'the host to start' });
    await host.close();
    const error = await pending;
    expect(error.code).toBe('UHLP_ENDPOINT_UNAVAILABLE');
    expect(server.isAvailable('tool.hang', 'cap.test')).toBe(false);
    expect((await rejection(server.invoke('tool.hang', 'cap.test', {}))).code).toBe('UHLP_ENDPOINT_UNAVAILABLE');
  });

  it('reconnects after the core restarts and registers its routes again', async () => {
    const host = client();
    host.handle('tool.echo', 'cap.test', async (payload) => ({ outcome: 'applied', observation: payload }));
    let connects = 0;
    host.on('connected', () => (connects += 1));
    host.start();
    await host.ready(2000);
    await server.close();
    await waitFor(() => !host.isReady(), { what: 'the host to lose its registration' });
    server = createSpineServer({ socketPath, secret: SECRET });
    await server.listen();
    await server.waitForRoute('tool.echo', 'cap.test', 3000);
    expect(connects).toBe(2);
    const result = await server.invoke('tool.echo', 'cap.test', 42);
    expect(result.observation).toBe(42);
  });

  it('keeps one route when a host registers it twice, and hands it to the newest connection', async () => {
    const first = await peer();
    first.send('{"type":"endpoint_register","affordance_key":"a.b","capability_handle":"cap.x"}\n');
    first.send('{"type":"endpoint_register","affordance_key":"a.b","capability_handle":"cap.x"}\n');
    expect(await first.next()).toEqual({ type: 'endpoint_registered', affordance_key: 'a.b', capability_handle: 'cap.x' });
    expect(await first.next()).toMatchObject({ type: 'endpoint_registered' });
    expect(server.routes()).toHaveLength(1);

    const second = await peer();
    second.send('{"type":"endpoint_register","affordance_key":"a.b","capability_handle":"cap.x"}\n');
    await second.next();
    expect(server.routes()).toHaveLength(1);

    const invocation = server.invoke('a.b', 'cap.x', { n: 1 }, { timeoutMs: 2000 });
    const invoke = await second.next();
    expect(invoke).toMatchObject({ type: 'endpoint_invoke', affordance_key: 'a.b', capability_handle: 'cap.x', action: { normalized_payload: { n: 1 } } });
    second.send(`${JSON.stringify({ type: 'endpoint_result', invocation_id: invoke['invocation_id'], outcome: 'rejected', reason: 'busy' })}\n`);
    expect(await invocation).toEqual({ invocationId: invoke['invocation_id'], outcome: 'rejected', reason: 'busy' });

    // The replaced connection closing must not take the route from its successor.
    expect(server.connectionCount()).toBe(2);
    first.close();
    await waitFor(() => server.connectionCount() === 1, { what: 'one connection' });
    expect(server.isAvailable('a.b', 'cap.x')).toBe(true);
    expect(server.routes()).toHaveLength(1);
  });

  it.each([
    ['not json', 'not json at all'],
    ['not an object', '[1,2,3]'],
    ['no type', '{"affordance_key":"a"}'],
    ['unknown type', '{"type":"endpoint_explode"}'],
    ['register without capability', '{"type":"endpoint_register","affordance_key":"a"}'],
    ['key with a slash', '{"type":"endpoint_register","affordance_key":"a/b","capability_handle":"c"}'],
    ['result with a bad outcome', '{"type":"endpoint_result","invocation_id":"x","outcome":"maybe"}'],
    ['rejected result without reason', '{"type":"endpoint_result","invocation_id":"x","outcome":"rejected"}'],
    ['result for an unknown invocation', '{"type":"endpoint_result","invocation_id":"nope","outcome":"applied"}'],
  ])('answers a malformed line (%s) with an error and keeps serving', async (_name, line) => {
    const raw = await peer();
    raw.send(`${line}\n`);
    const answer = await raw.next();
    expect(answer).toMatchObject({ type: 'error', code: 'UHLP_SPINE_BAD_MESSAGE' });
    expect(typeof answer['message']).toBe('string');
    raw.send('{"type":"endpoint_register","affordance_key":"still","capability_handle":"alive"}\n');
    expect(await raw.next()).toMatchObject({ type: 'endpoint_registered', affordance_key: 'still' });
  });

  it('drops an oversized line with an error and reads the next one', async () => {
    const raw = await peer();
    raw.send(`{"type":"exit","pad":"${'x'.repeat(5000)}"}\n{"type":"endpoint_register","affordance_key":"k","capability_handle":"c"}\n`);
    expect(await raw.next()).toMatchObject({ type: 'error', code: 'UHLP_SPINE_BAD_MESSAGE' });
    expect(await raw.next()).toMatchObject({ type: 'endpoint_registered' });
    expect(exits).toBe(0);
  });

  it('calls onExit for {"type":"exit"} carrying the secret', async () => {
    const raw = await peer();
    raw.send(`${JSON.stringify({ type: 'exit', secret: SECRET })}\n`);
    await waitFor(() => exits === 1, { what: 'the host to exit' });
  });

  it('fails an invocation the host does not answer in time with UHLP_ENDPOINT_TIMEOUT', async () => {
    const raw = await peer();
    raw.send('{"type":"endpoint_register","affordance_key":"slow","capability_handle":"c"}\n');
    await raw.next();
    const error = await rejection(server.invoke('slow', 'c', {}, { timeoutMs: 50 }));
    expect(error.code).toBe('UHLP_ENDPOINT_TIMEOUT');
    // The late answer is refused as unknown instead of resolving anything.
    const invoke = await raw.next();
    raw.send(`${JSON.stringify({ type: 'endpoint_result', invocation_id: invoke['invocation_id'], outcome: 'applied' })}\n`);
    expect(await raw.next()).toMatchObject({ type: 'error', invocation_id: invoke['invocation_id'] });
  });

  it('answers a throwing handler as rejected handler_error', async () => {
    const host = client();
    host.handle('tool.throw', 'cap.test', async () => {
      throw new Error('boom');
    });
    host.start();
    await host.ready(2000);
    const result = await server.invoke('tool.throw', 'cap.test', {});
    expect(result).toMatchObject({ outcome: 'rejected', reason: 'handler_error', observation: { message: 'boom' } });
  });

  it('refuses a socket path longer than a Unix socket address holds', async () => {
    const long = createSpineServer({ socketPath: join(dir, 'x'.repeat(120), 'core.sock'), secret: SECRET });
    await expect(long.listen()).rejects.toMatchObject({ code: 'UHLP_CONFIG_INVALID' });
  });

  it('refuses to listen on a socket another server holds, and replaces a stale socket file', async () => {
    const second = createSpineServer({ socketPath, secret: SECRET });
    await expect(second.listen()).rejects.toMatchObject({ code: 'UHLP_CONFIG_INVALID' });
    await second.close();
    expect(server.routes()).toEqual([]);
    const raw = await peer();
    raw.send('{"type":"endpoint_register","affordance_key":"k","capability_handle":"c"}\n');
    expect(await raw.next()).toMatchObject({ type: 'endpoint_registered' });

    const stalePath = join(dir, 'stale.sock');
    await writeFile(stalePath, '');
    const third = createSpineServer({ socketPath: stalePath, secret: SECRET });
    await third.listen();
    await third.close();
  });
  describe('protected routes and exit', () => {
    const register = (affordance: string, capability: string, secret?: unknown): string =>
      `${JSON.stringify({ type: 'endpoint_register', affordance_key: affordance, capability_handle: capability, ...(secret !== undefined ? { secret } : {}) })}\n`;

    it.each([
      ['shell without a secret', 'tool.shell.exec', 'cap.std.shell', undefined],
      ['shell with a wrong secret', 'tool.shell.exec', 'cap.std.shell', newSpineSecret()],
      ['shell with the secret one character off', 'tool.shell.exec', 'cap.std.shell', `${SECRET.slice(0, -1)}${SECRET.endsWith('0') ? '1' : '0'}`],
      ['shell with a prefix of the secret', 'tool.shell.exec', 'cap.std.shell', SECRET.slice(0, 16)],
      ['web without a secret', 'tool.web.fetch', 'cap.std.web.fetch', undefined],
      ['web with a wrong secret', 'tool.web.fetch', 'cap.std.web.fetch', 'guess'],
      ['the shell affordance under another capability', 'tool.shell.exec', 'cap.mine', undefined],
      ['another affordance under the shell capability', 'tool.evil', 'cap.std.shell', undefined],
      ['another affordance under the web capability', 'tool.evil', 'cap.std.web.fetch', 'nope'],
    ])('refuses %s with UHLP_SPINE_FORBIDDEN, logs it, and keeps the connection', async (_name, affordance, capability, secret) => {
      const rogue = await peer();
      rogue.send(register(affordance, capability, secret));
      expect(await rogue.next()).toMatchObject({ type: 'error', code: 'UHLP_SPINE_FORBIDDEN', affordance_key: affordance, capability_handle: capability });
      expect(server.routes()).toEqual([]);
      expect(refusals.map((error) => error.code)).toEqual(['UHLP_SPINE_FORBIDDEN']);
      expect(JSON.stringify(refusals[0]!.details)).not.toContain(SECRET);
      // Unprotected routes need no secret, on the same connection.
      rogue.send(register('chat.reply.emit', 'cap.chat'));
      expect(await rogue.next()).toMatchObject({ type: 'endpoint_registered', affordance_key: 'chat.reply.emit' });
    });

    it('answers a secret that is not a string as a bad message', async () => {
      const rogue = await peer();
      rogue.send(register('tool.shell.exec', 'cap.std.shell', 42));
      expect(await rogue.next()).toMatchObject({ type: 'error', code: 'UHLP_SPINE_BAD_MESSAGE' });
      rogue.send(`${JSON.stringify({ type: 'exit', secret: ['x'] })}\n`);
      expect(await rogue.next()).toMatchObject({ type: 'error', code: 'UHLP_SPINE_BAD_MESSAGE' });
      expect(exits).toBe(0);
    });

    it('registers protected routes with the secret, and a rogue can neither take them over nor disturb the host', async () => {
      const host = createSpineClient({ socketPath, secret: SECRET, initialReconnectDelayMs: 20 });
      clients.push(host);
      const commands: unknown[] = [];
      host.handle('tool.shell.exec', 'cap.std.shell', async (payload) => {
        commands.push(payload);
        return { outcome: 'applied', observation: { ran: true } };
      });
      let disconnects = 0;
      host.on('disconnected', () => (disconnects += 1));
      host.start();
      await host.ready(2000);
      const owner = server.routes()[0]!.connectionId;

      const rogue = await peer();
      for (const secret of [undefined, 'wrong', newSpineSecret()]) {
        rogue.send(register('tool.shell.exec', 'cap.std.shell', secret));
        expect(await rogue.next()).toMatchObject({ type: 'error', code: 'UHLP_SPINE_FORBIDDEN' });
      }
      rogue.send('{"type":"exit"}\n');
      expect(await rogue.next()).toMatchObject({ type: 'error', code: 'UHLP_SPINE_FORBIDDEN' });

      expect(server.routes()).toEqual([{ affordanceKey: 'tool.shell.exec', capabilityHandle: 'cap.std.shell', connectionId: owner }]);
      const result = await server.invoke('tool.shell.exec', 'cap.std.shell', { argv: ['true'] }, { timeoutMs: 2000 });
      expect(result.outcome).toBe('applied');
      expect(commands).toEqual([{ argv: ['true'] }]);
      expect(disconnects).toBe(0);
      expect(host.isReady()).toBe(true);
      expect(exits).toBe(0);
      expect(refusals.every((error) => error.code === 'UHLP_SPINE_FORBIDDEN')).toBe(true);
      expect(refusals).toHaveLength(4);
    });

    it('a client with a secret function offers what it reads at each registration', async () => {
      let current: string | undefined = 'stale';
      const host = createSpineClient({ socketPath, secret: () => current, initialReconnectDelayMs: 20 });
      clients.push(host);
      const errors: Array<{ code: string }> = [];
      host.on('error-message', (message: { code: string }) => errors.push(message));
      host.handle('tool.web.fetch', 'cap.std.web.fetch', async () => ({ outcome: 'applied' }));
      host.start();
      await waitFor(() => errors.length === 1, { what: 'the error message' });
      expect(errors[0]).toMatchObject({ code: 'UHLP_SPINE_FORBIDDEN' });
      current = SECRET;
      // A reconnect registers again, with the secret read anew.
      for (const route of server.routes()) expect(route.affordanceKey).not.toBe('tool.web.fetch');
      await server.close();
      await waitFor(() => !host.isReady(), { what: 'the host to lose its registration' });
      server = createSpineServer({ socketPath, secret: SECRET });
      await server.listen();
      await server.waitForRoute('tool.web.fetch', 'cap.std.web.fetch', 3000);
    });

    it('refuses exit without the secret or with a wrong one, and obeys it with the secret', async () => {
      const raw = await peer();
      for (const line of ['{"type":"exit"}', JSON.stringify({ type: 'exit', secret: 'wrong' }), JSON.stringify({ type: 'exit', secret: SECRET.toUpperCase() })]) {
        raw.send(`${line}\n`);
        expect(await raw.next()).toMatchObject({ type: 'error', code: 'UHLP_SPINE_FORBIDDEN' });
      }
      expect(exits).toBe(0);
      raw.send(`${JSON.stringify({ type: 'exit', secret: SECRET })}\n`);
      await waitFor(() => exits === 1, { what: 'the host to exit' });
    });

    it('writes the secret file 0600 only once the socket is free, makes the socket 0600, and removes the file on close', async () => {
      const secretFile = join(dir, 'spine.secret');
      const otherSocket = join(dir, 'other.sock');
      const first = createSpineServer({ socketPath: otherSocket, secret: SECRET, secretFile });
      await first.listen();
      try {
        expect((await readFile(secretFile, 'utf8')).trim()).toBe(SECRET);
        expect((await stat(secretFile)).mode & 0o777).toBe(0o600);
        expect((await stat(otherSocket)).mode & 0o777).toBe(0o600);
        // A second core beside a live one fails without replacing the live one's secret.
        const second = createSpineServer({ socketPath: otherSocket, secret: newSpineSecret(), secretFile });
        await expect(second.listen()).rejects.toMatchObject({ code: 'UHLP_CONFIG_INVALID' });
        await second.close();
        expect((await readFile(secretFile, 'utf8')).trim()).toBe(SECRET);
      } finally {
        await first.close();
      }
      await expect(stat(secretFile)).rejects.toMatchObject({ code: 'ENOENT' });
    });

    it('refuses to start without a real secret', () => {
      expect(() => createSpineServer({ socketPath, secret: '' })).toThrow(/secret/);
      expect(() => createSpineServer({ socketPath, secret: 'short' })).toThrow(/secret/);
    });
  });
});
