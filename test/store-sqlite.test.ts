import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openSqliteStore, SCHEMA_VERSION } from '../src/store/sqlite.ts';
import { makeTree, removeTree } from './helpers.ts';
import { storeContract } from './store-contract.ts';

const dirs: string[] = [];
after(() => dirs.forEach(removeTree));
function freshPath(): string {
  const d = makeTree({});
  dirs.push(d);
  return join(d, '.quarry', 'index.db');
}

describe('SqliteStore: the store contract', () => {
  storeContract(async () => openSqliteStore(freshPath()));
});

describe('SqliteStore specifics', () => {
  it('uses WAL and records its schema version', async () => {
    const path = freshPath();
    const s = openSqliteStore(path);
    await s.close();
    const db = new Database(path);
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(
      db.prepare(`SELECT value FROM meta WHERE key = 'schema_version'`).pluck().get(),
      String(SCHEMA_VERSION),
    );
    db.close();
  });

  it('refuses an index from a newer quarry with a clear message', async () => {
    const path = freshPath();
    await openSqliteStore(path).close();
    const db = new Database(path);
    db.prepare(`UPDATE meta SET value = '999' WHERE key = 'schema_version'`).run();
    db.close();
    assert.throws(
      () => openSqliteStore(path),
      /newer quarry \(schema 999\): upgrade quarry or delete \.quarry\//,
    );
  });
});
