// The docs stand on their own: a user has the repository and nothing beside it.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';

const REPO = resolve(import.meta.dirname, '..');
const DOCS = [
  'README.md',
  ...readdirSync(join(REPO, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

describe('the docs', () => {
  it('never point outside the repository (regression: links to a DESIGN.md and ../shared/ that users do not have)', () => {
    for (const doc of DOCS) {
      const text = readFileSync(join(REPO, doc), 'utf8');
      assert.doesNotMatch(text, /DESIGN\.md/, doc);
      assert.doesNotMatch(text, /\.\.\/shared\//, doc);
    }
  });

  it('link only to files that exist', () => {
    for (const doc of DOCS) {
      const text = readFileSync(join(REPO, doc), 'utf8');
      for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/.test(target)) continue; // a URL
        assert.ok(existsSync(resolve(dirname(join(REPO, doc)), target)), `${doc} links to ${target}`);
      }
    }
  });
});
