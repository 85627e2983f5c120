import { after, before, describe } from 'node:test';
import { resolveConfig } from '../src/config/config.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { makeTree, removeTree } from './helpers.ts';
import { storeContract } from './store-contract.ts';
import { startServer, type TestServer } from './store-servers.ts';

const trees: string[] = [];
after(() => trees.forEach(removeTree));

let n = 0;
/** A fresh, empty store of this driver: a new project folder and a new repository key in the shared server. */
async function fresh(url: string): Promise<Store> {
  const root = makeTree({});
  trees.push(root);
  const config = resolveConfig({
    root,
    userConfig: false,
    env: {},
    overrides: { store: { url, repo: `repo-${++n}` } },
  });
  return openStore(config, root, { create: true });
}

describe('PostgreSQL + pgvector: the store contract', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer('postgres');
  });
  after(async () => server?.dispose());
  storeContract(() => fresh(server.url));
});

describe('Chroma (vectors) + SQLite: the store contract', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer('chroma');
  });
  after(async () => server?.dispose());
  storeContract(() => fresh(server.url));
});
