import { z } from 'zod';
import { QuarryError } from '../errors.ts';

/**
 * `quarry.toml` and `~/.config/quarry/config.toml`, as zod schemas: the one place that says which settings exist and
 * what each takes. Unknown keys are errors in every section (a typo must not be ignored silently), and the same
 * schema gives the JSON Schema editors read (`quarry schema`).
 */
const count = z.number().int().nonnegative();
const positive = z.number().int().positive();
const share = z.number().min(0).max(1);
const weight = z.number().nonnegative();

export const EMBED_PROVIDERS = ['local', 'static', 'onnx', 'ollama', 'openai', 'gemini', 'none'] as const;
export const STORE_DRIVERS = ['sqlite', 'postgres', 'chroma'] as const;

export const SettingsSchema = z
  .strictObject({
    max_file_bytes: positive.describe('files larger than this many bytes are skipped (default 1048576)'),
    include_secrets: z.boolean().describe('index files that look like secrets (default false)'),
    include_hard_links: z
      .boolean()
      .describe(
        'index files with several names (hard links), which may be files outside the project (default false)',
      ),
    ignore: z.array(z.string()).describe('extra ignore patterns, gitignore syntax'),
    workers: count.describe('parse workers for indexing; 0 picks one per core, at most 4'),
    chunk: z
      .strictObject({
        max_chars: positive.describe('a definition larger than this is split (default 2000)'),
        target_chars: positive.describe('small neighbours are merged up to this size (default 1000)'),
        window_lines: positive.describe('line-window fallback: lines per window (default 60)'),
        overlap_lines: count.describe('line-window fallback: lines shared by neighbours (default 8)'),
      })
      .partial(),
    embed: z
      .strictObject({
        provider: z
          .enum(EMBED_PROVIDERS)
          .describe(
            'local (all-MiniLM-L6-v2 on ONNX), static (a token table distilled from it: seconds, no transformer), a remote service, or none',
          ),
        model: z.string(),
        base_url: z.string(),
        api_key_env: z.string(),
        query_prefix: z.string(),
        document_prefix: z.string(),
        model_dir: z.string(),
        download: z.boolean(),
        workers: count,
        threads: count,
        device: z
          .enum(['auto', 'cpu', 'cuda'])
          .describe('where the local model runs: auto (CUDA when its files are installed), cpu, cuda'),
        shared_cache: z.boolean(),
      })
      .partial(),
    search: z
      .strictObject({
        top_k: positive.describe('results returned by default (10)'),
        fusion: z.enum(['rrf', 'linear']),
        rrf_k: weight,
        lexical_weight: weight,
        dense_weight: weight,
        dense_floor: share,
        no_evidence_floor: share,
        mmr_lambda: share,
        test_lift: weight.describe(
          "share of a test file's score lent to the file it tests, unless the question is about tests (0 = off)",
        ),
        exact_weight: weight.describe(
          'weight of text the query quotes (or an error message it pastes) found verbatim in a chunk (0 = off)',
        ),
        graph_hop: weight.describe(
          "share of a top file's score lent to the files that define what it uses, one hop over the references (0 = off)",
        ),
        git_recency: weight.describe("weight of a file's change recency in git, a prior (0 = off)"),
        git_cochange: weight.describe(
          "share of a top file's score lent to the files that changed with it in git (0 = off)",
        ),
        rerank: z
          .strictObject({
            protocol: z
              .enum(['none', 'tei', 'v1', 'llm'])
              .describe(
                'tei or v1: a cross-encoder server; llm: the configured chat model ranks the candidates listwise',
              ),
            url: z.string(),
            model: z
              .string()
              .describe('tei/v1: the reranker model; llm: a provider:model spec (default: llm.model)'),
            top: positive,
            budget: positive.describe('llm: tokens of candidate text in the ranking prompt (default 6000)'),
            timeout_ms: positive.describe('llm: after this the fused order stands (default 20000)'),
          })
          .partial(),
      })
      .partial(),
    context: z
      .strictObject({
        packing: z.enum(['files', 'chunks']),
        budget: count,
        soft_ratio: share,
        map_tokens: count,
        context_lines: count,
        named_file_share: share,
        system_prompt: z.string(),
        redact_secrets: z
          .boolean()
          .describe('replace secrets found inside files in what goes to a model or an agent (default true)'),
      })
      .partial(),
    llm: z
      .strictObject({
        model: z.string().describe('provider:name, e.g. ollama:qwen2.5-coder or openai:gpt-4o-mini'),
        base_url: z.string(),
        api_key_env: z.string(),
        api_key: z.string(),
        temperature: z.number().min(0).max(2),
        max_output_tokens: positive,
        context_window: count,
        timeout_ms: positive,
        retries: count,
      })
      .partial(),
    store: z
      .strictObject({
        driver: z.enum(STORE_DRIVERS),
        url: z.string(),
        repo: z.string(),
      })
      .partial(),
  })
  .partial();

export type Settings = z.infer<typeof SettingsSchema>;

/** The JSON Schema of the settings file (`quarry schema`; `#:schema` in a TOML file, or an editor's mapping). */
export function settingsJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(SettingsSchema),
    title: 'quarry.toml',
    description: "quarry's settings: the project's quarry.toml or the user's ~/.config/quarry/config.toml",
  };
}

const show = (v: unknown) => JSON.stringify(v) ?? String(v);

/** A value out of a parsed file by its path, for the message. */
function at(raw: unknown, path: readonly PropertyKey[]): unknown {
  let v = raw;
  for (const k of path) v = v && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[k] : undefined;
  return v;
}

/** Checks a parsed settings file; a problem is one line naming the setting and what it takes. */
export function checkSettings(raw: unknown, source: string): Settings {
  const r = SettingsSchema.safeParse(raw);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const path = issue.path.map(String);
  const name = path.join('.');
  const got = at(raw, issue.path);
  let what: string;
  switch (issue.code) {
    case 'unrecognized_keys': {
      const key = [...path, issue.keys[0]!].join('.');
      const shape = path.reduce<z.ZodType>(
        (s, k) => ((s as unknown as { shape?: Record<string, z.ZodType> }).shape?.[k] as z.ZodType) ?? s,
        SettingsSchema,
      );
      const unwrapped = (shape as unknown as { unwrap?: () => z.ZodType }).unwrap?.() ?? shape;
      const known = Object.keys((unwrapped as unknown as { shape?: object }).shape ?? {});
      throw new QuarryError(
        'BAD_CONFIG',
        `${source}: unknown setting "${key}"${known.length ? ` (known${path.length ? ` in [${name}]` : ''}: ${known.join(', ')})` : ''}`,
      );
    }
    case 'invalid_value': {
      const values = issue.values.map(show);
      what =
        values.length === 2
          ? `must be ${values[0]} or ${values[1]}`
          : `must be one of ${issue.values.join(', ')}`;
      break;
    }
    case 'invalid_type':
      what =
        issue.expected === 'number' || issue.expected === 'int'
          ? 'must be a non-negative number'
          : issue.expected === 'boolean'
            ? 'must be true or false'
            : issue.expected === 'string'
              ? 'must be a string (in quotes)'
              : issue.expected === 'array'
                ? 'must be a list, e.g. ["dist/", "*.min.js"]'
                : issue.expected === 'object'
                  ? `must be a section: [${name}]`
                  : `must be ${issue.expected}`;
      break;
    case 'too_small':
      what =
        Number(issue.minimum) === 0 ? 'must be a non-negative number' : `must be at least ${issue.minimum}`;
      break;
    case 'too_big':
      what = `must be at most ${issue.maximum}`;
      break;
    default:
      what = issue.message;
  }
  throw new QuarryError('BAD_CONFIG', `${source}: ${name} ${what}, got ${show(got)}`);
}
