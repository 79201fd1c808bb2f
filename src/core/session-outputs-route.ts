/**
 * `GET /_uhlp/sessions/<sid>/outputs/<path>`: a declared output a turn of a
 * stored session left in `output/<sid>/` (write-surface.ts). The session id is
 * the credential (at least 96 random bits): the session must exist and not have
 * expired, and the path must be a file the session's turns published.
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { normalizeAppPath } from '../apps/definition-paths.js';
import { errorBody, UhlpError } from '../shared/errors.js';
import { isSessionId } from '../state/session-id.js';
import type { SessionStore } from '../state/session-store.js';

export function registerSessionOutputsRoute(app: FastifyInstance, deps: { sessions: Pick<SessionStore, 'getSession'>; outputsRoot: string }): void {
  app.get<{ Params: { sid: string; '*': string } }>('/_uhlp/sessions/:sid/outputs/*', async (request, reply) => {
    const { sid } = request.params;
    if (!isSessionId(sid)) throw new UhlpError('UHLP_SESSION_ID_INVALID', 'not a session id', { field: 'sid' });
    const session = await deps.sessions.getSession(sid);
    if (session === undefined) throw new UhlpError('UHLP_SESSION_NOT_FOUND', `session "${sid}" does not exist or has expired`, { field: 'sid' });
    const relative = normalizeAppPath(request.params['*'], 'path');
    const root = path.join(deps.outputsRoot, sid);
    const file = path.join(root, relative);
    if (!file.startsWith(root + path.sep)) throw new UhlpError('UHLP_DEFINITION_PATH_REFUSED', 'the path leaves the session outputs', { field: 'path' });
    // Only what the core moved here itself: a regular file, never through a link.
    const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => undefined);
    const info = await handle?.stat();
    if (handle === undefined || !info?.isFile()) {
      await handle?.close();
      const error = new UhlpError('UHLP_SESSION_OUTPUT_NOT_FOUND', `session "${sid}" has no output "output/${relative}"`, { field: 'path', path: `output/${relative}` });
      return reply.code(error.statusCode).send(errorBody(error, request.id));
    }
    return reply
      .header('content-type', 'application/octet-stream')
      .header('content-length', info.size)
      .header('x-uhlp-app', session.appId)
      .send(handle.createReadStream());
  });
}
