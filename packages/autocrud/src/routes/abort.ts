// The request's AbortSignal for the repository: it aborts when the client goes away before the
// answer (the response closes unfinished), so that the statement is cancelled and its connection
// freed. Fastify's own `request.signal` is not used: it listens to the request stream's `close`,
// which fires as soon as a body has been read (checked on Fastify 5.12.8, Node 20 and 24: every
// POST aborted at once), and it is missing before Fastify 5.x releases that Kit supports.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ClientGoneError } from './route-errors.js';

export { ClientGoneError } from './route-errors.js';

/** A signal that aborts (with {@link ClientGoneError}) when the client goes away before the answer is sent. */
export function clientSignal(request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const response = reply.raw;
  if (request.raw.socket?.destroyed === true) controller.abort(new ClientGoneError());
  else
    response.once('close', () => {
      if (!response.writableFinished) controller.abort(new ClientGoneError());
    });
  return controller.signal;
}
