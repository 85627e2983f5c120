import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { QuarryError } from '../errors.ts';
import { writeAtomic } from '../workspace/atomic.ts';
import { checkSettings, EMBED_PROVIDERS, STORE_DRIVERS } from './schema.ts';

/** Field weights for BM25 over a chunk's path, symbol names and body. */
export interface FieldWeights {
  path: number;
  symbol: number;
  body: number;
}

export interface ChunkOptions {
  /** A definition larger than this (characters) is split. Default 2000. */
  maxChars: number;
  /** Small neighbouring pieces are merged up to this size (characters). Default 1000. */
  targetChars: number;
  /** Line-window fallback: lines per window. Default 60. */
  windowLines: number;
  /** Line-window fallback: lines shared by neighbouring windows. Default 8. */
  overlapLines: number;
}

/** The names the settings schema accepts (config/schema.ts), as a type. */
export type EmbedProvider = (typeof EMBED_PROVIDERS)[number];
const PROVIDERS: readonly EmbedProvider[] = EMBED_PROVIDERS;

export interface EmbedOptions {
  /** `local` (all-MiniLM-L6-v2 on ONNX, the default), `ollama`, `openai` (any OpenAI-compatible server), `gemini`,
   * or `none` (lexical only). */
  provider: EmbedProvider;
  /** Remote providers: the model (`nomic-embed-text`, `text-embedding-3-small`, `text-embedding-004`, …). */
  model?: string;
  /** Remote providers: the server root (LM Studio, vLLM, llama.cpp or TEI for `openai`). */
  baseUrl?: string;
  /** Remote providers: the environment variable holding the API key. Default OPENAI_API_KEY / GEMINI_API_KEY. */
  apiKeyEnv?: string;
  /** Prepended to queries / documents (defaults known per model, e.g. nomic's `search_query: `). */
  queryPrefix?: string;
  documentPrefix?: string;
  /** A folder holding `model.onnx` (or the Transformers.js `onnx/` layout), or the .onnx file itself. */
  modelDir?: string;
  /** Download the default weights on first use when none are installed. Default true. */
  download: boolean;
  /** Background embedding workers; 0 picks min(4, cores / 2). */
  workers: number;
  /** onnxruntime threads per worker; 0 picks one. */
  threads: number;
  /** Where the local model runs: auto (CUDA when installed), cpu, cuda. Default auto. */
  device?: 'auto' | 'cpu' | 'cuda';
  /**
   * Look vectors up in the user's cache (`~/.cache/quarry/embeddings.db`) before embedding, and keep new ones there:
   * a second clone of a repository re-embeds only what differs. Default true (`shared_cache`, QUARRY_SHARED_CACHE).
   */
  sharedCache?: boolean;
}

export type Packing = 'files' | 'chunks';

export interface ContextOptions {
  /** `chunks` (the most relevant chunks with surrounding lines) or `files` (whole files in rank order). */
  packing: Packing;
  /** Tokens of code context (the hard limit); 0 derives it from the model's context window. */
  budget: number;
  /** `files` packing stops adding files once this share of the budget is used (Aye Chat's soft limit). */
  softRatio: number;
  /** Tokens reserved for the repository map; 0 leaves it out. */
  mapTokens: number;
  /** Lines of surrounding code around each chunk (`chunks` packing). */
  contextLines: number;
  /** Largest share of the budget one file named in the question may take. */
  namedFileShare: number;
  /** Replaces the built-in system prompt. */
  systemPrompt?: string;
  /**
   * Replace secrets found inside files (keys, tokens, passwords; see context/redact.ts) in what is sent to a model or
   * an agent. Default true.
   */
  redactSecrets: boolean;
}

export interface LlmOptions {
  /** `provider:name`: openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, gemini:gemini-2.5-flash, ollama:qwen2.5-coder,
   * lmstudio:…, vllm:…, llamacpp:…, compat:… (with base_url), or gguf:/path/to/model.gguf. */
  model?: string;
  /** The server root for ollama and OpenAI-compatible servers. */
  baseUrl?: string;
  /** The environment variable with the API key (default per provider: OPENAI_API_KEY, ANTHROPIC_API_KEY, …). */
  apiKeyEnv?: string;
  /** The key itself (better kept in the user config, `~/.config/quarry/config.toml`, than in a project file). */
  apiKey?: string;
  temperature: number;
  /** Longest answer asked for, in tokens (less when the window is short). */
  maxOutputTokens: number;
  /** The model's context window, when quarry's table does not know it. */
  contextWindow: number;
  /** Per request, ms. */
  timeoutMs: number;
  /** Retries on 429 and 5xx (with backoff, honouring Retry-After). */
  retries: number;
}

export type StoreDriver = (typeof STORE_DRIVERS)[number];
const DRIVERS: readonly StoreDriver[] = STORE_DRIVERS;

/** Where the index lives (`[store]`): the embedded SQLite file, a PostgreSQL database, or a Chroma server. */
export interface StoreOptions {
  /** Default `sqlite`; a `url` names its own driver (`postgres://…`, `chroma://host:port`). */
  driver: StoreDriver;
  /** `postgres://user:pass@host:port/db`, `chroma://host:port` (or `chroma+https://…`), or a SQLite file path. */
  url?: string;
  /** The repository's key in a store shared by many (PostgreSQL, Chroma). Default: the folder's name. */
  repo?: string;
}

export interface QuarryConfig {
  /** Files larger than this are skipped. Default 1 MiB. */
  maxFileBytes: number;
  /** Index files that look like secrets (`.env*`, private keys, credentials). Default false. */
  includeSecrets: boolean;
  /** Index files with more than one name (hard links), which may be files outside the project. Default false. */
  includeHardLinks?: boolean;
  /** Extra ignore patterns (gitignore syntax), on top of `.gitignore` and `.quarryignore`. */
  ignore: string[];
  chunk: ChunkOptions;
  /** Parse workers for indexing; 0 picks one per core, at most 4. */
  workers: number;
  embed: EmbedOptions;
  search: {
    /** Results returned by default. Default 10. */
    topK: number;
    weights: FieldWeights;
    /** How lexical and dense lists combine in hybrid mode: reciprocal rank fusion, or a weighted sum. */
    fusion: 'rrf' | 'linear';
    /** RRF's k. */
    rrfK: number;
    lexicalWeight: number;
    denseWeight: number;
    /** Share of a test file's score lent to the file it tests (0 turns the signal off). */
    testLift: number;
    /** Weight of text the query quotes found verbatim in a chunk, beside the best lexical match's 1 (0 = off). */
    exactWeight: number;
    /** Share of a top file's score lent to the files defining what it uses (one hop; 0 = off). */
    graphHop: number;
    /** Weight of a file's change recency in git (0 = off). */
    gitRecency: number;
    /** Share of a top file's score lent to the files that changed with it in git (0 = off). */
    gitCochange: number;
    /** Dense matches below this cosine similarity are not counted. Default 0 (off). */
    denseFloor: number;
    /**
     * When no word of the query occurs in the index (no lexical, file-name or symbol evidence at all), dense matches
     * must reach this cosine similarity to be shown: gibberish gets "no match" instead of ten confident guesses.
     * Default 0.4 (MiniLM: nonsense strings reach 0.12–0.39 on quarry's own code; see docs/retrieval.md).
     */
    noEvidenceFloor: number;
    /** MMR λ for the chunk results: below 1, results from a file already shown give way to other files. Default 0.7. */
    mmrLambda: number;
    /** Second-stage re-ranking by a cross-encoder server: off by default. */
    rerank: {
      protocol: 'none' | 'tei' | 'v1' | 'llm';
      url?: string;
      model?: string;
      top: number;
      /** llm: tokens of candidate text in the ranking prompt. */
      budget?: number;
      /** llm: milliseconds before the fused order stands. */
      timeoutMs?: number;
    };
  };
  context: ContextOptions;
  llm: LlmOptions;
  store: StoreOptions;
}

export type UserConfig = {
  [K in keyof QuarryConfig]?: QuarryConfig[K] extends object
    ? QuarryConfig[K] extends unknown[]
      ? QuarryConfig[K]
      : Partial<QuarryConfig[K]>
    : QuarryConfig[K];
};

export const DEFAULT_CONFIG: QuarryConfig = {
  maxFileBytes: 1024 * 1024,
  includeSecrets: false,
  ignore: [],
  chunk: { maxChars: 2000, targetChars: 1000, windowLines: 60, overlapLines: 8 },
  workers: 0,
  embed: { provider: 'local', download: true, workers: 0, threads: 0, sharedCache: true },
  store: { driver: 'sqlite' },
  search: {
    topK: 10,
    weights: { path: 4, symbol: 3, body: 1 },
    fusion: 'rrf',
    // measured on the practice sets (docs/retrieval.md): a flat optimum around k = 20 and dense weight 0.5–1
    rrfK: 20,
    lexicalWeight: 1,
    denseWeight: 0.75,
    testLift: 0,
    exactWeight: 1,
    graphHop: 0,
    gitRecency: 0,
    gitCochange: 0,
    denseFloor: 0,
    noEvidenceFloor: 0.4,
    mmrLambda: 0.7,
    rerank: { protocol: 'none', top: 30 },
  },
  context: {
    packing: 'chunks',
    budget: 0,
    softRatio: 0.5,
    mapTokens: 1024,
    contextLines: 3,
    namedFileShare: 0.5,
    redactSecrets: true,
  },
  llm: { temperature: 0.2, maxOutputTokens: 2048, contextWindow: 0, timeoutMs: 120_000, retries: 2 },
};

function readToml(file: string): UserConfig {
  if (!existsSync(file)) return {};
  try {
    const out = toUserConfig(parseToml(readFileSync(file, 'utf8')) as Record<string, unknown>, file);
    // a folder named in a settings file is relative to that file, wherever quarry runs from
    if (out.embed?.modelDir) out.embed.modelDir = resolve(dirname(file), out.embed.modelDir);
    return out;
  } catch (err) {
    if (err instanceof QuarryError) throw err;
    throw new QuarryError('BAD_CONFIG', `cannot parse ${file}: ${(err as Error).message.split('\n')[0]}`, {
      cause: err,
    });
  }
}

/** Copies `section.<file key>` to `out.<field>` (the schema has checked each value). */
function copyFields<T extends object>(
  section: Record<string, unknown>,
  out: T,
  fields: Record<string, keyof T>,
): void {
  for (const [key, field] of Object.entries(fields))
    if (section[key] !== undefined) (out as Record<keyof T, unknown>)[field] = section[key];
}

/** A settings file (snake_case, checked by the zod schema in schema.ts) as the config's own fields. */
function toUserConfig(raw: Record<string, unknown>, source: string): UserConfig {
  const file = checkSettings(raw, source);
  const out: UserConfig = {};
  if (file.max_file_bytes !== undefined) out.maxFileBytes = file.max_file_bytes;
  if (file.include_secrets !== undefined) out.includeSecrets = file.include_secrets;
  if (file.include_hard_links !== undefined) out.includeHardLinks = file.include_hard_links;
  if (file.workers !== undefined) out.workers = file.workers;
  if (file.ignore !== undefined) out.ignore = file.ignore;
  if (file.chunk) {
    out.chunk = {};
    copyFields(file.chunk, out.chunk, {
      max_chars: 'maxChars',
      target_chars: 'targetChars',
      window_lines: 'windowLines',
      overlap_lines: 'overlapLines',
    });
  }
  if (file.embed) {
    out.embed = {};
    copyFields(file.embed, out.embed, {
      provider: 'provider',
      model_dir: 'modelDir',
      model: 'model',
      base_url: 'baseUrl',
      api_key_env: 'apiKeyEnv',
      query_prefix: 'queryPrefix',
      document_prefix: 'documentPrefix',
      workers: 'workers',
      threads: 'threads',
      device: 'device',
      download: 'download',
      shared_cache: 'sharedCache',
    });
  }
  if (file.search) {
    const { rerank, ...search } = file.search;
    out.search = {};
    copyFields(search, out.search, {
      fusion: 'fusion',
      top_k: 'topK',
      rrf_k: 'rrfK',
      lexical_weight: 'lexicalWeight',
      dense_weight: 'denseWeight',
      dense_floor: 'denseFloor',
      no_evidence_floor: 'noEvidenceFloor',
      mmr_lambda: 'mmrLambda',
      test_lift: 'testLift',
      exact_weight: 'exactWeight',
      graph_hop: 'graphHop',
      git_recency: 'gitRecency',
      git_cochange: 'gitCochange',
    });
    if (rerank) {
      const { timeout_ms, ...rest } = rerank;
      out.search.rerank = {
        ...DEFAULT_CONFIG.search.rerank,
        ...rest,
        ...(timeout_ms !== undefined ? { timeoutMs: timeout_ms } : {}),
      };
    }
  }
  if (file.context) {
    out.context = {};
    copyFields(file.context, out.context, {
      packing: 'packing',
      budget: 'budget',
      soft_ratio: 'softRatio',
      map_tokens: 'mapTokens',
      context_lines: 'contextLines',
      named_file_share: 'namedFileShare',
      system_prompt: 'systemPrompt',
      redact_secrets: 'redactSecrets',
    });
  }
  if (file.store) {
    out.store = {};
    copyFields(file.store, out.store, { driver: 'driver', url: 'url', repo: 'repo' });
  }
  if (file.llm) {
    out.llm = {};
    copyFields(file.llm, out.llm, {
      model: 'model',
      base_url: 'baseUrl',
      api_key_env: 'apiKeyEnv',
      api_key: 'apiKey',
      temperature: 'temperature',
      max_output_tokens: 'maxOutputTokens',
      context_window: 'contextWindow',
      timeout_ms: 'timeoutMs',
      retries: 'retries',
    });
  }
  return out;
}

function storeDriver(v: unknown, where: string): StoreDriver {
  if (!DRIVERS.includes(v as StoreDriver))
    throw new QuarryError(
      'BAD_CONFIG',
      `${where} must be one of ${DRIVERS.join(', ')}, got ${JSON.stringify(v)}`,
    );
  return v as StoreDriver;
}

/** The driver a store URL names (`postgres://`, `chroma://`, else a SQLite file), or undefined for a bare path. */
export function driverOfUrl(url: string): StoreDriver | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
  if (!scheme) return undefined;
  if (scheme === 'postgres' || scheme === 'postgresql') return 'postgres';
  if (scheme === 'chroma' || scheme === 'chroma+http' || scheme === 'chroma+https') return 'chroma';
  if (scheme === 'sqlite' || scheme === 'file') return 'sqlite';
  throw new QuarryError(
    'BAD_CONFIG',
    `unknown store URL scheme "${scheme}://": use postgres://…, chroma://host:port or a SQLite file path`,
  );
}

function fromEnv(env: NodeJS.ProcessEnv): UserConfig {
  const out: UserConfig = {};
  const n = (name: string): number | undefined => {
    const v = env[name];
    if (v === undefined || v === '') return undefined;
    const parsed = Number(v);
    if (!Number.isFinite(parsed) || parsed < 0)
      throw new QuarryError('BAD_CONFIG', `${name} must be a non-negative number, got "${v}"`);
    return parsed;
  };
  const maxBytes = n('QUARRY_MAX_FILE_BYTES');
  if (maxBytes !== undefined) out.maxFileBytes = maxBytes;
  const workers = n('QUARRY_WORKERS');
  if (workers !== undefined) out.workers = workers;
  if (env.QUARRY_EMBED) {
    if (!PROVIDERS.includes(env.QUARRY_EMBED as EmbedProvider))
      throw new QuarryError(
        'BAD_CONFIG',
        `QUARRY_EMBED must be one of ${PROVIDERS.join(', ')}, got "${env.QUARRY_EMBED}"`,
      );
    out.embed = { provider: env.QUARRY_EMBED as EmbedProvider };
  }
  if (env.QUARRY_SHARED_CACHE)
    out.embed = { ...out.embed, sharedCache: !/^(0|false|no|off)$/i.test(env.QUARRY_SHARED_CACHE) };
  if (env.QUARRY_EMBED_MODEL) out.embed = { ...out.embed, model: env.QUARRY_EMBED_MODEL };
  if (env.QUARRY_EMBED_DEVICE) {
    if (!['auto', 'cpu', 'cuda'].includes(env.QUARRY_EMBED_DEVICE))
      throw new QuarryError(
        'BAD_CONFIG',
        `QUARRY_EMBED_DEVICE must be auto, cpu or cuda, got "${env.QUARRY_EMBED_DEVICE}"`,
      );
    out.embed = { ...out.embed, device: env.QUARRY_EMBED_DEVICE as 'auto' | 'cpu' | 'cuda' };
  }
  if (env.QUARRY_EMBED_URL) out.embed = { ...out.embed, baseUrl: env.QUARRY_EMBED_URL };
  if (env.QUARRY_OFFLINE && /^(1|true|yes)$/i.test(env.QUARRY_OFFLINE))
    out.embed = { ...out.embed, download: false };
  if (env.QUARRY_FUSION === 'rrf' || env.QUARRY_FUSION === 'linear')
    out.search = { fusion: env.QUARRY_FUSION };
  const rrfK = n('QUARRY_RRF_K');
  const denseWeight = n('QUARRY_DENSE_WEIGHT');
  if (rrfK !== undefined || denseWeight !== undefined)
    out.search = {
      ...out.search,
      ...(rrfK !== undefined ? { rrfK } : {}),
      ...(denseWeight !== undefined ? { denseWeight } : {}),
    };
  if (env.QUARRY_MODEL) out.llm = { model: env.QUARRY_MODEL };
  if (env.QUARRY_LLM_URL) out.llm = { ...out.llm, baseUrl: env.QUARRY_LLM_URL };
  if (env.QUARRY_SYSTEM_PROMPT_FILE) {
    try {
      out.context = { systemPrompt: readFileSync(env.QUARRY_SYSTEM_PROMPT_FILE, 'utf8') };
    } catch (err) {
      throw new QuarryError(
        'BAD_CONFIG',
        `QUARRY_SYSTEM_PROMPT_FILE: cannot read ${env.QUARRY_SYSTEM_PROMPT_FILE} (${(err as NodeJS.ErrnoException).code ?? 'error'}): point it at a readable file`,
      );
    }
  }
  if (env.QUARRY_SYSTEM_PROMPT) out.context = { systemPrompt: env.QUARRY_SYSTEM_PROMPT };
  if (env.QUARRY_STORE_URL) out.store = { url: env.QUARRY_STORE_URL };
  if (env.QUARRY_STORE) out.store = { ...out.store, driver: storeDriver(env.QUARRY_STORE, 'QUARRY_STORE') };
  if (env.QUARRY_REPO) out.store = { ...out.store, repo: env.QUARRY_REPO };
  if (env.QUARRY_INCLUDE_SECRETS) out.includeSecrets = /^(1|true|yes)$/i.test(env.QUARRY_INCLUDE_SECRETS);
  if (env.QUARRY_INCLUDE_HARD_LINKS)
    out.includeHardLinks = /^(1|true|yes)$/i.test(env.QUARRY_INCLUDE_HARD_LINKS);
  return out;
}

function merge(base: QuarryConfig, over: UserConfig): QuarryConfig {
  return {
    ...base,
    ...Object.fromEntries(Object.entries(over).filter(([, v]) => v !== undefined && typeof v !== 'object')),
    ignore: [...base.ignore, ...(over.ignore ?? [])],
    chunk: { ...base.chunk, ...over.chunk },
    embed: { ...base.embed, ...over.embed },
    context: { ...base.context, ...over.context },
    llm: { ...base.llm, ...over.llm },
    store: storeOf(base.store, over.store),
    search: {
      ...base.search,
      ...over.search,
      weights: { ...base.search.weights, ...over.search?.weights },
    },
  } as QuarryConfig;
}

/** A URL names its driver; a driver named alone keeps no URL of another driver. */
function storeOf(base: StoreOptions, over: Partial<StoreOptions> | undefined): StoreOptions {
  if (!over) return base;
  const merged = { ...base, ...over };
  const fromUrl = over.url ? driverOfUrl(over.url) : undefined;
  if (fromUrl && !over.driver) merged.driver = fromUrl;
  else if (over.driver && !over.url && base.url && driverOfUrl(base.url) !== over.driver) delete merged.url;
  return merged;
}

export interface ResolveConfigOptions {
  /** Project root; its `quarry.toml` is read. */
  root?: string;
  /** Highest-priority overrides (command-line flags, library callers). */
  overrides?: UserConfig;
  env?: NodeJS.ProcessEnv;
  /** Read `~/.config/quarry/config.toml` (or `$XDG_CONFIG_HOME/quarry/config.toml`). Default true. */
  userConfig?: boolean;
}

/** defaults < user config < project `quarry.toml` < `QUARRY_*` environment < overrides. */
export function resolveConfig(options: ResolveConfigOptions = {}): QuarryConfig {
  const env = options.env ?? process.env;
  let config = DEFAULT_CONFIG;
  if (options.userConfig !== false) {
    const dir = env.XDG_CONFIG_HOME || join(homedir(), '.config');
    config = merge(config, readToml(join(dir, 'quarry', 'config.toml')));
  }
  if (options.root) config = merge(config, readToml(join(options.root, 'quarry.toml')));
  config = merge(config, fromEnv(env));
  if (options.overrides) config = merge(config, options.overrides);
  if (config.chunk.targetChars > config.chunk.maxChars) config.chunk.targetChars = config.chunk.maxChars;
  return config;
}

/** The project's own settings file, as written (not merged with defaults). */
export function readProjectSettings(root: string): Record<string, unknown> {
  const file = join(root, 'quarry.toml');
  if (!existsSync(file)) return {};
  try {
    return parseToml(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new QuarryError('BAD_CONFIG', `cannot parse ${file}: ${(err as Error).message.split('\n')[0]}`);
  }
}

/**
 * Changes settings in the project's `quarry.toml` (`{ search: { top_k: 20 } }`; `null` removes a key), after checking
 * the result as the config reader would. Written atomically; comments in the file are not kept.
 */
export function writeProjectSettings(
  root: string,
  changes: Record<string, unknown>,
): Record<string, unknown> {
  const next = structuredClone(readProjectSettings(root));
  const apply = (target: Record<string, unknown>, patch: Record<string, unknown>, at: string) => {
    for (const [k, v] of Object.entries(patch)) {
      // `__proto__` from JSON is an own key: merged, it would reach Object.prototype (every object, every request)
      if (k === '__proto__' || k === 'constructor' || k === 'prototype')
        throw new QuarryError('BAD_CONFIG', `"${at}${k}" is not a setting: name the setting to change`);
      if (v === null) delete target[k];
      else if (typeof v === 'object' && !Array.isArray(v)) {
        const sub = (typeof target[k] === 'object' && target[k] !== null ? target[k] : {}) as Record<
          string,
          unknown
        >;
        apply(sub, v as Record<string, unknown>, `${at}${k}.`);
        target[k] = sub;
      } else target[k] = v;
    }
  };
  if (typeof changes !== 'object' || changes === null || Array.isArray(changes))
    throw new QuarryError('BAD_CONFIG', 'settings must be an object of sections: {"search": {"top_k": 20}}');
  apply(next, changes, '');
  toUserConfig(next, 'quarry.toml'); // throws a one-line BAD_CONFIG naming the setting
  writeAtomic(join(root, 'quarry.toml'), `${stringifyToml(next)}\n`);
  return next;
}
