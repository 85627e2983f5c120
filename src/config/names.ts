/** The names some settings take, without the schema (config/schema.ts): the environment's parsers use them too. */
export const EMBED_PROVIDERS = ['local', 'static', 'onnx', 'ollama', 'openai', 'gemini', 'none'] as const;
export const EMBED_DEVICES = ['auto', 'cpu', 'cuda'] as const;
export const STORE_DRIVERS = ['sqlite', 'postgres', 'chroma'] as const;
export const FUSIONS = ['rrf', 'linear'] as const;
export const RANKERS = ['rrf', 'learned'] as const;
