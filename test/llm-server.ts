import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTP server on 127.0.0.1 that speaks the streaming chat protocols of OpenAI (and every OpenAI-compatible
 * server), Ollama, Anthropic and Gemini. It stands in for the remote model only: its "model" answers with a fixed
 * text, or with what `reply` makes of the request. Knobs: statuses to answer first (429 with Retry-After, 5xx), and
 * a stream cut in the middle.
 */
export interface LlmServer {
  url: string;
  requests: Array<{ path: string; headers: IncomingMessage['headers']; body: Record<string, unknown> }>;
  failFirst: number[];
  /** Close the connection after this many pieces of the next answer. */
  cutAfter?: number;
  /** Wait this long before the first piece of every answer (a slow model), and between pieces. */
  delayMs?: number;
  /** The answer for a request (default: "Hello from the fake model."). */
  reply: (body: Record<string, unknown>) => string;
  /** How the answer is cut into the pieces streamed (default: after each run of white space). */
  split?: (text: string) => string[];
  close(): Promise<void>;
}

/** The answer in pieces, as a model streams it. */
function pieces(text: string): string[] {
  return text.match(/\S*\s*/g)!.filter(Boolean);
}

export async function startLlmServer(): Promise<LlmServer> {
  const served = {
    requests: [],
    failFirst: [],
    reply: () => 'Hello from the fake model.',
  } as unknown as LlmServer;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d) => {
      raw += d;
    });
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as Record<string, unknown>;
      const path = req.url ?? '';
      served.requests.push({ path, headers: req.headers, body });
      const fail = served.failFirst.shift();
      if (fail) {
        res.writeHead(fail, {
          'content-type': 'application/json',
          ...(fail === 429 ? { 'retry-after': '0' } : {}),
        });
        res.end(
          JSON.stringify({
            error: { message: fail === 429 ? 'rate limited' : 'server error', type: 'error' },
          }),
        );
        return;
      }
      if (req.headers.authorization === 'Bearer bad-key' || req.headers['x-api-key'] === 'bad-key') {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'invalid api key', type: 'authentication_error' } }));
        return;
      }
      const parts = (served.split ?? pieces)(served.reply(body));
      const cut = served.cutAfter;
      served.cutAfter = undefined;
      const emit = (chunks: string[], end: string) => {
        if (cut === undefined && served.delayMs) {
          // a slow model: headers now, each piece after a pause
          res.flushHeaders();
          const delay = served.delayMs;
          void (async () => {
            for (const c of chunks) {
              await new Promise((r) => setTimeout(r, delay));
              res.write(c);
            }
            res.end(end);
          })();
          return;
        }
        if (cut === undefined) {
          for (const c of chunks) res.write(c);
          res.end(end);
          return;
        }
        // the first pieces really reach the client before the connection drops
        res.flushHeaders();
        for (const c of chunks.slice(0, cut)) res.write(c);
        setTimeout(() => res.socket?.destroy(), 100);
      };
      if (path === '/v1/chat/completions') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const chunk = (delta: Record<string, unknown>, finish: string | null) =>
          `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 0, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        emit(
          [chunk({ role: 'assistant', content: '' }, null), ...parts.map((p) => chunk({ content: p }, null))],
          `${chunk({}, 'stop')}data: [DONE]\n\n`,
        );
      } else if (path === '/api/chat') {
        res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        const line = (content: string, done: boolean) =>
          `${JSON.stringify({
            model: body.model,
            created_at: new Date(0).toISOString(),
            message: { role: 'assistant', content },
            done,
            ...(done
              ? { done_reason: 'stop', total_duration: 1, prompt_eval_count: 1, eval_count: parts.length }
              : {}),
          })}\n`;
        emit(
          parts.map((p) => line(p, false)),
          line('', true),
        );
      } else if (path === '/v1/messages') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const ev = (type: string, data: Record<string, unknown>) =>
          `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
        emit(
          [
            ev('message_start', {
              message: {
                id: 'msg_1',
                type: 'message',
                role: 'assistant',
                model: body.model,
                content: [],
                stop_reason: null,
                stop_sequence: null,
                usage: { input_tokens: 1, output_tokens: 1 },
              },
            }),
            ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
            ...parts.map((p) =>
              ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: p } }),
            ),
          ],
          ev('content_block_stop', { index: 0 }) +
            ev('message_delta', {
              delta: { stop_reason: 'end_turn', stop_sequence: null },
              usage: { output_tokens: parts.length },
            }) +
            ev('message_stop', {}),
        );
      } else if (/^\/v1beta\/models\/[^/:]+:streamGenerateContent/.test(path)) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const data = (text: string, finish?: string) =>
          `data: ${JSON.stringify({
            candidates: [
              {
                content: { parts: [{ text }], role: 'model' },
                index: 0,
                ...(finish ? { finishReason: finish } : {}),
              },
            ],
            ...(finish
              ? { usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 } }
              : {}),
          })}\r\n\r\n`;
        emit(
          parts.slice(0, -1).map((p) => data(p)),
          data(parts[parts.length - 1] ?? '', 'STOP'),
        );
      } else {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no route ${path}` } }));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  served.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  served.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return served;
}
