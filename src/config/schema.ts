import { z } from 'zod';
import { QuarryError } from '../errors.ts';
import { EMBED_DEVICES, EMBED_PROVIDERS, FUSIONS, RANKERS, STORE_DRIVERS } from './names.ts';

// zod compiles an object schema's parser with `new Function` on its first parse: for the config, parsed a few times a
// process, that compile cost ~9 ms of every command's start and saved nothing
z.config({ jitless: true });

/**
 * quarry's settings, written once: `ConfigSchema` says which settings exist, what each takes, its default (the
 * config's type, `QuarryConfig`, is its output and `DEFAULT_CONFIG` its parse of nothing) and, in `.describe()`, what
 * the settings file's JSON Schema says of it. The settings file (`quarry.toml`, `~/.config/quarry/config.toml`) is
 * derived from it: the same settings under snake_case names (`maxFileBytes` is `max_file_bytes`), none required,
 * unknown keys an error in every section (a typo must not be ignored silently), and the same schema gives the JSON
 * Schema editors read (`quarry schema`). A setting made with `codeOnly` is not in the file.
 */
const count = z.number().int().nonnegative();
const positive = z.number().int().positive();
const share = z.number().min(0).max(1);
const weight = z.number().nonnegative();

/** Settings callers may pass in code (`overrides`) but a settings file may not name. */
const codeOnlySettings = new WeakSet<z.ZodType>();
function codeOnly<T extends z.ZodType>(schema: T): T {
  codeOnlySettings.add(schema);
  return schema;
}

export const ConfigSchema = z.object({
  /** Files larger than this are skipped. Default 1 MiB. */
  maxFileBytes: positive
    .describe('files larger than this many bytes are skipped (default 1048576)')
    .default(1024 * 1024),
  /** Index files that look like secrets (`.env*`, private keys, credentials). Default false. */
  includeSecrets: z.boolean().describe('index files that look like secrets (default false)').default(false),
  /** Index files with more than one name (hard links), which may be files outside the project. Default false. */
  includeHardLinks: z
    .boolean()
    .describe(
      'index files with several names (hard links), which may be files outside the project (default false)',
    )
    .optional(),
  /** Extra ignore patterns (gitignore syntax), on top of `.gitignore` and `.quarryignore`. */
  ignore: z.array(z.string()).describe('extra ignore patterns, gitignore syntax').default([]),
  /** Parse workers for indexing; 0 picks one per core, at most 4. */
  workers: count.describe('parse workers for indexing; 0 picks one per core, at most 4').default(0),
  /**
   * A run with at least this many files to parse makes them searchable by line windows first, then parses them; 0
   * never does. Default 10000.
   */
  quickPassFiles: count
    .describe(
      'a run with at least this many files to parse makes them searchable by line windows first, then parses them; 0: never (default 10000)',
    )
    .default(10_000),
  /**
   * Remember each folder's listing between index runs (`.quarry/walk.json`) and list again only the folders whose
   * stat changed, like git's untracked cache. Default true; turn it off on a file system that does not update a
   * folder's times when its entries change.
   */
  walkCache: z
    .boolean()
    .describe(
      "remember each folder's listing between index runs and list again only folders whose times changed (default true)",
    )
    .default(true),
  /**
   * A run with at least this many files to read writes them on a thread of its own (SQLite), while the main thread
   * hands out files to the parse workers; 0 never does. Default 2000.
   */
  writeBehindFiles: count
    .describe(
      'a run with at least this many files to read writes the index on a thread of its own; 0: never (default 2000)',
    )
    .default(2_000),
  chunk: z
    .object({
      /** A definition larger than this (characters) is split. Default 2000. */
      maxChars: positive.describe('a definition larger than this is split (default 2000)').default(2000),
      /** Small neighbouring pieces are merged up to this size (characters). Default 1000. */
      targetChars: positive
        .describe('small neighbours are merged up to this size (default 1000)')
        .default(1000),
      /** Line-window fallback: lines per window. Default 60. */
      windowLines: positive.describe('line-window fallback: lines per window (default 60)').default(60),
      /** Line-window fallback: lines shared by neighbouring windows. Default 8. */
      overlapLines: count.describe('line-window fallback: lines shared by neighbours (default 8)').default(8),
    })
    .prefault({}),
  embed: z
    .object({
      /** `local` (all-MiniLM-L6-v2 on ONNX, the default), `ollama`, `openai` (any OpenAI-compatible server), `gemini`,
       * or `none` (lexical only). */
      provider: z
        .enum(EMBED_PROVIDERS)
        .describe(
          'local (all-MiniLM-L6-v2 on ONNX), static (a token table distilled from it: seconds, no transformer), a remote service, or none',
        )
        .default('local'),
      /** Remote providers: the model (`nomic-embed-text`, `text-embedding-3-small`, `text-embedding-004`, …). */
      model: z.string().optional(),
      /** Remote providers: the server root (LM Studio, vLLM, llama.cpp or TEI for `openai`). */
      baseUrl: z.string().optional(),
      /** Remote providers: the environment variable holding the API key. Default OPENAI_API_KEY / GEMINI_API_KEY. */
      apiKeyEnv: z.string().optional(),
      /** Prepended to queries / documents (defaults known per model, e.g. nomic's `search_query: `). */
      queryPrefix: z.string().optional(),
      documentPrefix: z.string().optional(),
      /** A folder holding `model.onnx` (or the Transformers.js `onnx/` layout), or the .onnx file itself. */
      modelDir: z.string().optional(),
      /**
       * `static` provider: the token table instead of the one distilled from MiniLM: `code-v1` (shipped, trained for
       * code) or a table file (train/train_static.py writes one).
       */
      staticTable: z
        .string()
        .describe(
          'static provider: "code-v1" (the shipped table trained for code) or a token table file (.bin), instead of the one distilled from all-MiniLM-L6-v2',
        )
        .optional(),
      /** Download the default weights on first use when none are installed. Default true. */
      download: z.boolean().default(true),
      /** Background embedding workers; 0 picks min(4, cores / 2). */
      workers: count.default(0),
      /** onnxruntime threads per worker; 0 picks one. */
      threads: count.default(0),
      /** Where the local model runs: auto (CUDA when installed), cpu, cuda. Default auto. */
      device: z
        .enum(EMBED_DEVICES)
        .describe('where the local model runs: auto (CUDA when its files are installed), cpu, cuda')
        .optional(),
      /**
       * Look vectors up in the user's cache (`~/.cache/quarry/embeddings.db`) before embedding, and keep new ones
       * there: a second clone of a repository re-embeds only what differs. Default true (`shared_cache`,
       * QUARRY_SHARED_CACHE). Optional in the type (an `EmbedOptions` may leave it out), true once resolved.
       */
      sharedCache: z.boolean().default(true).optional(),
    })
    .prefault({}),
  search: z
    .object({
      /** Results returned by default. Default 10. */
      topK: positive.describe('results returned by default (10)').default(10),
      /**
       * A search walks the working tree for edits since the last index when the tree holds at most this many files
       * (a walk costs ~20 µs a file); over it, a watcher (`quarry watch`, `serve`, `mcp`, `chat`) keeps the index
       * fresh, and a search without one says that edits are not looked for. 0: never walk, and say nothing.
       * Default 10000.
       */
      walkFiles: count
        .describe(
          'a search looks for edits since the last index in trees of at most this many files; larger ones need a watcher (0: never; default 10000)',
        )
        .default(10_000),
      /** How lexical and dense lists combine in hybrid mode: reciprocal rank fusion, or a weighted sum. */
      fusion: z.enum(FUSIONS).default('rrf'),
      /**
       * How files are ordered: `learned` (gradient-boosted trees over every list's signals, trained on queries mined
       * from 69 public repositories; models/ranker/), or `rrf` (the hand-set fusion alone). Default learned.
       */
      ranker: z
        .enum(RANKERS)
        .default('learned')
        .describe(
          'how files are ordered: learned (the shipped ranker model, default) or rrf (hand-set weights)',
        ),
      /** A ranker model of one's own (train/train_ranker.py --export) instead of the shipped one; read by feature name. */
      rankerModel: z
        .string()
        .describe('a ranker model file (train/train_ranker.py --export) used instead of the shipped one')
        .optional(),
      /** RRF's k. Measured on the practice sets (docs/retrieval.md): a flat optimum around k = 20 and dense weight
       * 0.5–1. */
      rrfK: weight.default(20),
      lexicalWeight: weight.default(1),
      denseWeight: weight.default(0.75),
      /** Dense matches below this cosine similarity are not counted. Default 0 (off). */
      denseFloor: share.default(0),
      /**
       * When no word of the query occurs in the index (no lexical, file-name or symbol evidence at all), dense matches
       * must reach this cosine similarity to be shown: gibberish gets "no match" instead of ten confident guesses.
       * Default 0.4 (MiniLM: nonsense strings reach 0.12–0.39 on quarry's own code; see docs/retrieval.md).
       */
      noEvidenceFloor: share.default(0.4),
      /** MMR λ for the chunk results: below 1, results from a file already shown give way to other files. Default 0.7. */
      mmrLambda: share.default(0.7),
      /** Share of a test file's score lent to the file it tests (0 turns the signal off). */
      testLift: weight
        .describe(
          "share of a test file's score lent to the file it tests, unless the question is about tests (0 = off)",
        )
        .default(0),
      /** Weight of text the query quotes found verbatim in a chunk, beside the best lexical match's 1 (0 = off). */
      exactWeight: weight
        .describe(
          'weight of text the query quotes (or an error message it pastes) found verbatim in a chunk (0 = off)',
        )
        .default(1),
      /** Share of a top file's score lent to the files defining what it uses (one hop; 0 = off). */
      graphHop: weight
        .describe(
          "share of a top file's score lent to the files that define what it uses, one hop over the references (0 = off)",
        )
        .default(0),
      /** Weight of a file's change recency in git (0 = off). */
      gitRecency: weight.describe("weight of a file's change recency in git, a prior (0 = off)").default(0),
      /** Share of a top file's score lent to the files that changed with it in git (0 = off). */
      gitCochange: weight
        .describe("share of a top file's score lent to the files that changed with it in git (0 = off)")
        .default(0),
      /** Second-stage re-ranking by a cross-encoder server: off by default. */
      rerank: z
        .object({
          protocol: z
            .enum(['none', 'tei', 'v1', 'llm'])
            .describe(
              'tei or v1: a cross-encoder server; llm: the configured chat model ranks the candidates listwise',
            )
            .default('none'),
          url: z.string().optional(),
          model: z
            .string()
            .describe('tei/v1: the reranker model; llm: a provider:model spec (default: llm.model)')
            .optional(),
          top: positive.default(30),
          /** llm: tokens of candidate text in the ranking prompt. */
          budget: positive
            .describe('llm: tokens of candidate text in the ranking prompt (default 6000)')
            .optional(),
          /** llm: milliseconds before the fused order stands. */
          timeoutMs: positive.describe('llm: after this the fused order stands (default 20000)').optional(),
        })
        .prefault({}),
      /** Field weights for BM25 over a chunk's path, symbol names and body. */
      weights: codeOnly(
        z.object({ path: weight.default(4), symbol: weight.default(3), body: weight.default(1) }),
      ).prefault({}),
    })
    .prefault({}),
  context: z
    .object({
      /** `chunks` (the most relevant chunks with surrounding lines) or `files` (whole files in rank order). */
      packing: z.enum(['files', 'chunks']).default('chunks'),
      /** Tokens of code context (the hard limit); 0 derives it from the model's context window. */
      budget: count.default(0),
      /** `files` packing stops adding files once this share of the budget is used (Aye Chat's soft limit). */
      softRatio: share.default(0.5),
      /** Tokens reserved for the repository map; 0 leaves it out. */
      mapTokens: count.default(1024),
      /** Lines of surrounding code around each chunk (`chunks` packing). */
      contextLines: count.default(3),
      /** Largest share of the budget one file named in the question may take. */
      namedFileShare: share.default(0.5),
      /**
       * Retrieved code stops where relevance falls off: a result scoring below this share of the first one's is not
       * sent, whatever room is left (0 fills the budget).
       */
      minRelevance: share
        .describe(
          "retrieved code below this share of the best result's score is not sent, room or not (0 = fill the budget)",
        )
        .default(0.25),
      /** Replaces the built-in system prompt. */
      systemPrompt: z.string().optional(),
      /**
       * Replace secrets found inside files (keys, tokens, passwords; see chunk/redact.ts) in what is sent to a model
       * or an agent. Default true.
       */
      redactSecrets: z
        .boolean()
        .describe('replace secrets found inside files in what goes to a model or an agent (default true)')
        .default(true),
    })
    .prefault({}),
  llm: z
    .object({
      /** `provider:name`: openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, gemini:gemini-2.5-flash,
       * ollama:qwen2.5-coder, lmstudio:…, vllm:…, llamacpp:…, compat:… (with base_url), or gguf:/path/to/model.gguf. */
      model: z.string().describe('provider:name, e.g. ollama:qwen2.5-coder or openai:gpt-4o-mini').optional(),
      /** The server root for ollama and OpenAI-compatible servers. */
      baseUrl: z.string().optional(),
      /** The environment variable with the API key (default per provider: OPENAI_API_KEY, ANTHROPIC_API_KEY, …). */
      apiKeyEnv: z.string().optional(),
      /** The key itself (better kept in the user config, `~/.config/quarry/config.toml`, than in a project file). */
      apiKey: z.string().optional(),
      temperature: z.number().min(0).max(2).default(0.2),
      /** Longest answer asked for, in tokens (less when the window is short). */
      maxOutputTokens: positive.default(2048),
      /** The model's context window, when quarry's table does not know it. */
      contextWindow: count.default(0),
      /** Per request, ms. */
      timeoutMs: positive.default(120_000),
      /** Retries on 429 and 5xx (with backoff, honouring Retry-After). */
      retries: count.default(2),
    })
    .prefault({}),
  /** Where the index lives (`[store]`): the embedded SQLite file, a PostgreSQL database, or a Chroma server. */
  store: z
    .object({
      /** Default `sqlite`; a `url` names its own driver (`postgres://…`, `chroma://host:port`). */
      driver: z.enum(STORE_DRIVERS).default('sqlite'),
      /** `postgres://user:pass@host:port/db`, `chroma://host:port` (or `chroma+https://…`), or a SQLite file path. */
      url: z.string().optional(),
      /** The repository's key in a store shared by many (PostgreSQL, Chroma). Default: the folder's name. */
      repo: z.string().optional(),
    })
    .prefault({}),
});

/** A setting's name in the settings file: `maxFileBytes` is `max_file_bytes`. */
export const fileKey = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

type Wrapper = z.ZodDefault | z.ZodPrefault | z.ZodOptional;
const isWrapper = (s: z.ZodType): s is Wrapper =>
  s instanceof z.ZodDefault || s instanceof z.ZodPrefault || s instanceof z.ZodOptional;

/** A setting's own type, without its default or optionality, described as the setting is. */
function bare(setting: z.ZodType): { type: z.ZodType; description: string | undefined } {
  let type = setting;
  let description = setting.description;
  while (isWrapper(type)) {
    type = type.unwrap() as z.ZodType;
    description ??= type.description;
  }
  return { type, description };
}

/** The settings file's schema for an object of settings: snake_case keys, none required, unknown keys refused. */
function fileSchema(settings: z.ZodObject): z.ZodObject {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, setting] of Object.entries(settings.shape)) {
    const { type, description } = bare(setting);
    if (codeOnlySettings.has(type)) continue;
    let inFile = type instanceof z.ZodObject ? fileSchema(type) : type;
    if (description !== undefined && inFile.description !== description)
      inFile = inFile.describe(description);
    shape[fileKey(name)] = inFile.optional();
  }
  return z.strictObject(shape);
}

let settings: z.ZodObject | undefined;

/**
 * `quarry.toml` and `~/.config/quarry/config.toml`, as a zod schema: made when a file is first read (~5 ms), not
 * by every command's start.
 */
function settingsSchema(): z.ZodObject {
  settings ??= fileSchema(ConfigSchema);
  return settings;
}

export type Settings = z.infer<z.ZodObject>;

/**
 * A checked settings file as config fields, renamed from snake_case. A table inside a section (`[search.rerank]`)
 * stands whole, replacing the one below it, so what it leaves out takes its defaults.
 */
function fromFile(
  settings: z.ZodObject,
  file: Record<string, unknown>,
  depth: number,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(settings.shape)) {
    const value = file[fileKey(name)];
    if (value === undefined) continue;
    const { type } = bare(setting);
    out[name] =
      type instanceof z.ZodObject ? fromFile(type, value as Record<string, unknown>, depth + 1) : value;
  }
  return depth >= 2 ? { ...settings.parse({}), ...out } : out;
}

/** A settings file (snake_case, parsed TOML) as the config's own fields, after `checkSettings`. */
export function settingsToConfig(raw: unknown, source: string): UserConfig {
  return fromFile(ConfigSchema, checkSettings(raw, source), 0) as UserConfig;
}

/** The JSON Schema of the settings file (`quarry schema`; `#:schema` in a TOML file, or an editor's mapping). */
export function settingsJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(settingsSchema()),
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
  const r = settingsSchema().safeParse(raw);
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
        settingsSchema(),
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

/** quarry's settings, resolved: the output of the one schema above, where each is described. */
export type QuarryConfig = z.output<typeof ConfigSchema>;

/** Settings as a settings file, the environment or a caller gives them: any top-level one, part of any section. */
export type UserConfig = {
  [K in keyof QuarryConfig]?: QuarryConfig[K] extends object
    ? QuarryConfig[K] extends unknown[]
      ? QuarryConfig[K]
      : Partial<QuarryConfig[K]>
    : QuarryConfig[K];
};
