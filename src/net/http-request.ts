import type { Agent, ClientRequest, IncomingMessage, RequestOptions } from 'node:http';

/** A request's answer: its status and its body as text. */
export interface HttpAnswer {
  status: number;
  text: string;
}

/** Why a request got no answer: `code` is the socket's (ECONNREFUSED, ECONNRESET, …) or `Timeout`. */
export class HttpFailure extends Error {
  constructor(
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(code, options);
    this.name = 'HttpFailure';
  }
}

/** The agents that keep sockets between one client's calls (their idle sockets do not hold the process open). */
export interface HttpAgents {
  http?: Agent;
  https?: Agent;
}

/**
 * One HTTP(S) request with node:http, for the clients a one-shot command runs: Node's `fetch` loads undici on its
 * first call, ~0.2 s of a `quarry search` that asks a warm local server (docs/benchmarks.md), where node:http costs
 * a few milliseconds. TLS (node:https) is loaded only for an https URL. Rejects with an HttpFailure when no answer
 * comes (the socket's error, or `Timeout` after `timeoutMs`); any status is an answer.
 */
export async function httpRequest(
  url: URL,
  init: { method: string; headers: Record<string, string>; body?: string; timeoutMs: number },
  agents: HttpAgents = {},
): Promise<HttpAnswer> {
  const secure = url.protocol === 'https:';
  const mod = secure ? await import('node:https') : await import('node:http');
  const agentKey = secure ? 'https' : 'http';
  agents[agentKey] ??= new mod.Agent({ keepAlive: true });
  const options: RequestOptions = {
    method: init.method,
    headers: {
      ...init.headers,
      ...(init.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(init.body)) }),
    },
    agent: agents[agentKey],
  };
  return new Promise<HttpAnswer>((resolve, reject) => {
    let req: ClientRequest | undefined;
    const timer = setTimeout(() => req?.destroy(new HttpFailure('Timeout')), init.timeoutMs);
    const fail = (err: Error) => {
      clearTimeout(timer);
      reject(
        err instanceof HttpFailure
          ? err
          : new HttpFailure((err as NodeJS.ErrnoException).code ?? err.name, { cause: err }),
      );
    };
    req = mod.request(url, options, (res: IncomingMessage) => {
      const parts: Buffer[] = [];
      res.on('data', (b: Buffer) => parts.push(b));
      res.on('error', fail);
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') });
      });
    });
    req.on('error', fail);
    req.end(init.body);
  });
}
