import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { LlmOptions } from '../config/config.ts';
import { QuarryError } from '../errors.ts';
import type { LlmProvider } from './types.ts';

/** The part of node-llama-cpp's API quarry uses (v3). */
interface NodeLlamaCpp {
  getLlama(o: {
    build: 'never';
    logLevel: 'error';
  }): Promise<{ loadModel(o: { modelPath: string }): Promise<GgufModel> }>;
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
 * node-llama-cpp is not a dependency (its prebuilt binaries are large): it is resolved from quarry's own
 * node_modules, or from the folder `QUARRY_NODE_LLAMA_CPP` names (an npm prefix where it is installed).
 */
async function loadNodeLlamaCpp(): Promise<NodeLlamaCpp> {
  const where = process.env.QUARRY_NODE_LLAMA_CPP;
  try {
    if (where) {
      const entry = createRequire(join(resolve(where), 'package.json')).resolve('node-llama-cpp');
      return (await import(pathToFileURL(entry).href)) as NodeLlamaCpp;
    }
    const name = 'node-llama-cpp';
    return (await import(name)) as NodeLlamaCpp;
  } catch (err) {
    throw new QuarryError(
      'BAD_CONFIG',
      where
        ? `node-llama-cpp is not installed under ${where} (QUARRY_NODE_LLAMA_CPP): run \`npm install --prefix ${where} node-llama-cpp\``
        : 'in-process GGUF models need node-llama-cpp: run `npm install node-llama-cpp` in the quarry folder (or set QUARRY_NODE_LLAMA_CPP to where it is installed)',
      { cause: err },
    );
  }
}

/**
 * A GGUF model run in this process through node-llama-cpp (no server). node-llama-cpp is an optional install: its
 * prebuilt llama.cpp binaries are large, and most users talk to a server.
 */
export async function openGguf(path: string, llm: LlmOptions): Promise<LlmProvider> {
  const file = resolve(path);
  if (!existsSync(file))
    throw new QuarryError('BAD_INPUT', `no GGUF model at ${file}: point gguf: at a .gguf file`);
  const mod = await loadNodeLlamaCpp();
  // never compile llama.cpp at run time (offline machines, minutes of work): use the prebuilt binary
  const llama = await mod.getLlama({ build: 'never', logLevel: 'error' });
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
