// The request's AbortSignal for the repository: it aborts when the client goes away before the
// answer (the response closes unfinished), so that the statement is cancelled and its connection
// freed. Fastify's own `request.signal` is not used: it listens to the request stream's `close`,
// which fires as soon as a body has been read (checked on Fastify 5.12.8, Node 20 and 24: every
// POST aborted at once), and it is missing before Fastify 5.x releases that Kit supports.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Answerable, ProblemShape } from '../answers.js';

/** Why a repository call of a route was abandoned: its client closed the connection. */
export class ClientGoneError extends Error implements Answerable {
  constructor() {
    super('The client closed the connection before the answer; the statement was cancelled.');
    this.name = 'ClientGoneError';
  }

  /** 499 (nginx's "client closed request"): for the access log and the audit trail, nobody reads it. */
  get httpStatus(): number {
    return 499;
  }

  /** An answer without a body, logged at debug: nobody is left to read it. */
  problem(): ProblemShape {
    return {
      status: this.httpStatus,
      log: {
        level: 'debug',
        message: 'AutoCrud: the client went away; its statement was cancelled',
      },
    };
  }
}

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
