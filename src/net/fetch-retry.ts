import pRetry from 'p-retry';

export interface RetryFetchOptions {
  /** Retries after the first attempt. */
  retries: number;
  /** The first wait; it doubles each retry. */
  backoffMs: number;
  timeoutMs: number;
}

/** A status worth another try: the service is busy (429) or failed for now (5xx). */
class RetryableStatus extends Error {
  constructor(readonly response: Response) {
    super(`HTTP ${response.status}`);
  }
}

/**
 * `fetch` with retries (p-retry): network errors, timeouts, 429 and 5xx are tried again with exponential backoff,
 * and a Retry-After header is waited out. Resolves to the last response (ok, or a status not worth retrying, or the
 * last 429/5xx once retries are spent); rejects with the network error once retries are spent.
 */
export async function fetchWithRetry(
  url: string,
  init: RequestInit,
  o: RetryFetchOptions,
): Promise<Response> {
  try {
    return await pRetry(
      async () => {
        const res = await fetch(url, { ...init, signal: AbortSignal.timeout(o.timeoutMs) });
        if (res.status === 429 || res.status >= 500) throw new RetryableStatus(res);
        return res;
      },
      {
        retries: o.retries,
        factor: 2,
        minTimeout: o.backoffMs,
        maxTimeout: Math.max(o.backoffMs, 30_000),
        randomize: false,
        async onFailedAttempt({ error, retriesLeft }) {
          if (!(error instanceof RetryableStatus) || retriesLeft === 0) return;
          const after = Number(error.response.headers.get('retry-after'));
          await error.response.body?.cancel();
          // the service said how long: wait that long first (the backoff follows)
          if (Number.isFinite(after) && after > 0) await new Promise((r) => setTimeout(r, after * 1000));
        },
      },
    );
  } catch (err) {
    if (err instanceof RetryableStatus) return err.response;
    throw err;
  }
}
