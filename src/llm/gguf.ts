import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { LlmOptions } from '../config/config.ts';
import { QuarryError } from '../errors.ts';
import type { LlmProvider } from './provider.ts';

/** The part of node-llama-cpp's API quarry uses (v3). */
interface NodeLlamaCpp {
  getLlama(): Promise<{ loadModel(o: { modelPath: string }): Promise<GgufModel> }>;
  LlamaChatSession: new (o: {
    contextSequence: unknown;
    systemPrompt?: string;
  }) => {
    getChatHistory(): Array<Record<string, unknown>>;
    setChatHistory(h: Array<Record<string, unknown>>): void;
    prompt(text: string, o: Record<string, unknown>): Promise<string>;
  };
}
interface GgufModel {
  trainContextSize: number;
  createContext(o: { contextSize: number }): Promise<{ getSequence(): unknown; dispose(): Promise<void> }>;
}

/**
 * A GGUF model run in this process through node-llama-cpp (no server). node-llama-cpp is an optional install: its
 * prebuilt llama.cpp binaries are large, and most users talk to a server.
 */
export async function openGguf(path: string, llm: LlmOptions): Promise<LlmProvider> {
  const file = resolve(path);
  if (!existsSync(file))
    throw new QuarryError('BAD_INPUT', `no GGUF model at ${file}: point gguf: at a .gguf file`);
  let mod: NodeLlamaCpp;
  try {
    // not a dependency: resolved at run time when the user has installed it
    const name = 'node-llama-cpp';
    mod = (await import(name)) as NodeLlamaCpp;
  } catch (err) {
    throw new QuarryError(
      'BAD_CONFIG',
      'in-process GGUF models need node-llama-cpp: run `npm install node-llama-cpp` in the quarry folder',
      { cause: err },
    );
  }
  const llama = await mod.getLlama();
  const model = await llama.loadModel({ modelPath: file });
  const window = llm.contextWindow > 0 ? llm.contextWindow : Math.min(model.trainContextSize, 8192);
  return {
    id: `gguf:${path}`,
    contextWindow: window,
    async *stream(messages, options = {}) {
      const context = await model.createContext({ contextSize: window });
      try {
        const system = messages
          .filter((m) => m.role === 'system')
          .map((m) => m.content)
          .join('\n\n');
        const turns = messages.filter((m) => m.role !== 'system');
        const last = turns.pop();
        const session = new mod.LlamaChatSession({
          contextSequence: context.getSequence(),
          ...(system ? { systemPrompt: system } : {}),
        });
        // earlier turns of a chat become the session's history
        const history = session.getChatHistory();
        for (const t of turns)
          history.push(
            t.role === 'user' ? { type: 'user', text: t.content } : { type: 'model', response: [t.content] },
          );
        session.setChatHistory(history);
        const queue: string[] = [];
        let wake: (() => void) | undefined;
        let done = false;
        let failure: unknown;
        session
          .prompt(last?.content ?? '', {
            temperature: options.temperature ?? llm.temperature,
            ...(options.maxOutputTokens ? { maxTokens: options.maxOutputTokens } : {}),
            ...(options.signal ? { signal: options.signal } : {}),
            onTextChunk: (text: string) => {
              queue.push(text);
              wake?.();
            },
          })
          .catch((err: unknown) => {
            failure = err;
          })
          .finally(() => {
            done = true;
            wake?.();
          });
        while (!done || queue.length) {
          if (queue.length) yield queue.shift()!;
          else
            await new Promise<void>((r) => {
              wake = r;
            });
        }
        if (failure)
          throw new QuarryError('LLM', `the GGUF model failed: ${String(failure).split('\n')[0]}`, {
            cause: failure,
          });
      } finally {
        await context.dispose();
      }
    },
  };
}
