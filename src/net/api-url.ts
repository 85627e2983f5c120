/**
 * The root of an HTTP API served under a prefix (`v1` for OpenAI-compatible servers, `v1beta` for Gemini, `api` for
 * Ollama), from the base URL a user configured. The prefix is added to the bare server (`http://127.0.0.1:8080`) and
 * to a base with a path of its own (a proxy's `…/ollama`); it is never doubled: a base that already ends with it
 * (`…/v1`, `…/v1/`) is taken as it is, not made `…/v1/v1/embeddings`, and so is one that names an API version of
 * its own (`…/v1beta/openai`, `…/api/v2`) when the prefix is a version. `onlyBare`: a base with any path is the
 * user's whole API root and is kept (an LLM's, whose SDK appends only the endpoint). Trailing slashes are dropped.
 */
export function apiRoot(base: string, prefix: string, options?: { onlyBare?: boolean }): string {
  const trimmed = base.replace(/\/+$/, '');
  let segments: string[];
  try {
    segments = new URL(trimmed).pathname.split('/').filter(Boolean);
  } catch {
    return `${trimmed}/${prefix}`; // not a URL: the request's own error says so
  }
  if (options?.onlyBare && segments.length) return trimmed;
  if (segments.at(-1) === prefix) return trimmed;
  if (VERSION.test(prefix) && segments.some((s) => VERSION.test(s))) return trimmed;
  return `${trimmed}/${prefix}`;
}

/** An API version as a path segment: `v1`, `v2`, `v1beta`, `v1alpha1`. */
const VERSION = /^v\d+[a-z0-9]*$/i;

/** `endpoint` under the API root of `base` (`apiRoot`): `apiUrl('http://host:8080/v1/', 'v1', 'embeddings')` is
 * `http://host:8080/v1/embeddings`, as is `apiUrl('http://host:8080', 'v1', 'embeddings')`. */
export function apiUrl(base: string, prefix: string, endpoint: string): string {
  return `${apiRoot(base, prefix)}/${endpoint}`;
}
