/**
 * The golden run records: what the notebook layer wrote in real runs (written by
 * tests/kernel/test_record_schema.py, which fails when these files are stale).
 */

import { readFileSync, readdirSync } from 'fs';
import { join } from 'path';

import { Json } from './records';

const FOLDER = join(__dirname, 'fixtures', 'records');

/** The names of the golden records (`plain_answer`, `tool_denied`, …). */
export const GOLDEN_NAMES: string[] = readdirSync(FOLDER)
  .filter(name => name.endsWith('.json'))
  .map(name => name.slice(0, -'.json'.length))
  .sort();

/** A fresh copy of the golden record `name`. */
export function golden(name: string): Json {
  return JSON.parse(readFileSync(join(FOLDER, `${name}.json`), 'utf8')) as Json;
}

/** The `index`th event of a golden record. */
export function goldenEvent(name: string, index = 0): Json {
  return (golden(name).events as Json[])[index];
}
