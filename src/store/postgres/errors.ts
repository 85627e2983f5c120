import { QuarryError } from '../../errors.ts';

/** `postgres://user:secret@host:5432/db` → `postgres://user@host:5432/db` (never print a password). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return url.replace(/:[^:@/]*@/, '@');
  }
}

/** One line that says what went wrong with the server and what to do. */
export function pgError(err: unknown, url: string, doing: string): QuarryError {
  if (err instanceof QuarryError) return err;
  const e = err as NodeJS.ErrnoException & { code?: string; message?: string };
  const where = redactUrl(url);
  const code = e?.code ?? '';
  const msg = String(e?.message ?? err).split('\n')[0] ?? '';
  const fix = (m: string, c: 'IO' | 'BAD_CONFIG' | 'BAD_INPUT' = 'IO') =>
    new QuarryError(c, m, { cause: err });
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH' || code === 'ETIMEDOUT')
    return fix(
      `cannot reach PostgreSQL at ${where} (${code}): start the server, or fix --store / [store] url`,
    );
  if (
    code === 'ECONNRESET' ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    code === 'EPIPE' ||
    // the pg client's own words for a connection that broke under it (the server killed mid-index)
    /terminat|Connection terminated|connection error and is not queryable|not queryable/i.test(msg)
  )
    return fix(
      `the PostgreSQL server at ${where} went away while ${doing}: start it again and re-run; what was committed stays, the next run resumes`,
    );
  if (code === '28P01' || code === '28000')
    return fix(
      `PostgreSQL at ${where} refused the credentials: check the user and password in the store URL`,
      'BAD_CONFIG',
    );
  if (code === '3D000')
    return fix(
      `PostgreSQL at ${where}: ${msg}: create it (createdb) or name another in the store URL`,
      'BAD_CONFIG',
    );
  if (code === '0A000' || code === '58P01' || /extension "vector"/.test(msg))
    return fix(
      `PostgreSQL at ${where} has no pgvector extension (${msg}): install pgvector on the server (it needs CREATE EXTENSION vector)`,
      'BAD_CONFIG',
    );
  if (code === '22000' && /dimensions/.test(msg))
    return fix(
      `a vector does not fit the table (${msg}): the embedder's dimension changed; run \`quarry index\` to rebuild`,
      'BAD_INPUT',
    );
  if (code === '42501')
    return fix(
      `PostgreSQL at ${where} denied ${doing} (${msg}): grant the store's user rights on its database`,
      'BAD_CONFIG',
    );
  return fix(`PostgreSQL at ${where} failed while ${doing}: ${msg}`);
}
