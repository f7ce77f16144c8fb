/**
 * The run record (`application/vnd.aimu.run+json`, version 1) and the view model drawn from it.
 *
 * Pure functions only: no DOM, no JupyterLab. The notebook layer rewrites the whole record on
 * every update, so everything here is cheap to recompute; the DOM layer (view.ts) uses the
 * stable keys made here to touch only the parts that changed.
 */

import { planMarkdown } from './plan';

export const MIME_TYPE = 'application/vnd.aimu.run+json';

/** The record versions this renderer understands. */
export const SUPPORTED_VERSION = 1;

/** `unfinished`: never written by the kernel; a running record whose run is gone (see asUnfinished). */
export type RunStatus = 'running' | 'done' | 'interrupted' | 'error' | 'unfinished';
export type ToolStatus = 'awaiting_approval' | 'running' | 'done' | 'error' | 'denied' | 'stopped';

export interface ImageRecord {
  data: string;
  mime_type: string;
  description: string;
}

export interface ApprovalRecord {
  approved: boolean;
  reason: string;
  /** `always`: "Always allow" let the call through (`chosen_at`: the call it was chosen at). */
  by: 'user' | 'policy' | 'timeout' | 'always';
  chosen_at?: string;
  /** Why the call asked (a tool that writes, executes or submits), when the gate said. */
  why?: string;
}

export interface TextEvent {
  /** `user_message`: what the user told the agent during the run, where it was delivered. */
  type: 'text' | 'thinking' | 'user_message';
  text: string;
  /** A `--schema` run's answer: the validated value (the text is the model's JSON). */
  output?: Record<string, unknown>;
}

export interface ToolEvent {
  type: 'tool';
  id: string;
  name: string;
  arguments: unknown;
  /** The arguments' names in the model's order (a saved notebook sorts JSON keys). */
  argument_names: string[];
  /** Arguments that are code, by name: their language (`''`: plain text). */
  code: Record<string, string>;
  /** Each code argument as a fenced Markdown block, written by the kernel (older records lack it). */
  code_markdown?: Record<string, string>;
  /** Text to draw in place of arguments or a result whose control or bidi characters the
   * kernel made visible; present only where it differs. */
  shown?: { arguments?: Record<string, string>; result?: string };
  status: ToolStatus;
  progress: unknown[];
  result: string | null;
  is_error: boolean;
  images: ImageRecord[];
  /** Set when the model could not see the images (a text-only model): says so. */
  images_note: string;
  approval: ApprovalRecord | null;
  children: RunEvent[];
}

export type RunEvent = TextEvent | ToolEvent;

export interface RunRecord {
  version: number;
  prompt: string;
  /** What a person reads in place of the prompt (Markdown; `%agent_fix`'s), when given. */
  prompt_markdown?: string;
  model: string;
  status: RunStatus;
  error: string | null;
  usage: { input_tokens: number; output_tokens: number };
  duration_s: number;
  events: RunEvent[];
  /** Which turns a response cache answered, as the footer says it (absent: none). */
  replayed?: string;
  /** Set when the run stopped at its limit of tool rounds: the kernel's words for it. */
  limit?: string;
  /** While the run takes messages: the key the inbox field claims it by (else null). */
  inbox: string | null;
  /** Names the run, so the renderer can ask the kernel whether it still goes on. */
  run: string;
}

/** Raised when the data is not a run record this renderer can draw. */
export class RecordError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecordError';
  }
}

const RUN_STATUSES: ReadonlySet<string> = new Set(['running', 'done', 'interrupted', 'error']);
const TOOL_STATUSES: ReadonlySet<string> = new Set([
  'awaiting_approval',
  'running',
  'done',
  'error',
  'denied',
  'stopped'
]);
const APPROVERS: ReadonlySet<string> = new Set(['user', 'policy', 'timeout', 'always']);
const IMAGE_MIME = /^image\/[a-z0-9.+-]+$/i;
const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown, fallback = ''): string {
  return typeof value === 'string' ? value : fallback;
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
}

function parseImage(value: unknown): ImageRecord | null {
  if (!isObject(value)) {
    return null;
  }
  const mime = str(value.mime_type);
  const data = str(value.data);
  if (!IMAGE_MIME.test(mime) || !data || !BASE64.test(data)) {
    return null;
  }
  return { data, mime_type: mime, description: str(value.description) };
}

function parseApproval(value: unknown): ApprovalRecord | null {
  if (!isObject(value)) {
    return null;
  }
  const by = str(value.by, 'policy');
  return {
    approved: value.approved === true,
    reason: str(value.reason),
    by: (APPROVERS.has(by) ? by : 'policy') as ApprovalRecord['by'],
    chosen_at: str(value.chosen_at),
    ...(typeof value.why === 'string' && value.why ? { why: value.why } : {})
  };
}

/** A JSON object of strings by name (anything else read as `''`). */
function parseStrings(value: unknown): Record<string, string> {
  const strings: Record<string, string> = {};
  if (isObject(value)) {
    for (const [name, text] of Object.entries(value)) {
      strings[name] = str(text);
    }
  }
  return strings;
}

/** The optional fields of a tool call the kernel writes for drawing it (absent: none). */
function parseDrawn(raw: Record<string, unknown>): Pick<ToolEvent, 'code_markdown' | 'shown'> {
  const drawn: Pick<ToolEvent, 'code_markdown' | 'shown'> = {};
  if (isObject(raw.code_markdown)) {
    drawn.code_markdown = parseStrings(raw.code_markdown);
  }
  if (isObject(raw.shown)) {
    const { arguments: args, result } = raw.shown;
    drawn.shown = {
      ...(isObject(args) ? { arguments: parseStrings(args) } : {}),
      ...(typeof result === 'string' ? { result } : {})
    };
  }
  return drawn;
}

function parseEvents(value: unknown, depth: number): RunEvent[] {
  if (!Array.isArray(value) || depth > 16) {
    return [];
  }
  const events: RunEvent[] = [];
  for (const raw of value) {
    if (!isObject(raw)) {
      continue;
    }
    if (raw.type === 'text' || raw.type === 'thinking' || raw.type === 'user_message') {
      const output = raw.type === 'text' && isObject(raw.output) ? { output: raw.output } : {};
      events.push({ type: raw.type, text: str(raw.text), ...output });
    } else if (raw.type === 'tool') {
      const status = str(raw.status, 'running');
      events.push({
        type: 'tool',
        id: str(raw.id),
        name: str(raw.name, '(unnamed tool)'),
        arguments: raw.arguments ?? {},
        argument_names: Array.isArray(raw.argument_names)
          ? raw.argument_names.filter((n): n is string => typeof n === 'string')
          : [],
        code: parseStrings(raw.code),
        ...parseDrawn(raw),
        status: (TOOL_STATUSES.has(status) ? status : 'running') as ToolStatus,
        progress: Array.isArray(raw.progress) ? raw.progress : [],
        result: typeof raw.result === 'string' ? raw.result : null,
        is_error: raw.is_error === true,
        images: Array.isArray(raw.images)
          ? raw.images.map(parseImage).filter((i): i is ImageRecord => i !== null)
          : [],
        images_note: str(raw.images_note),
        approval: parseApproval(raw.approval),
        children: parseEvents(raw.children, depth + 1)
      });
    } else if (raw.type === 'plan' && Array.isArray(raw.entries)) {
      events.push({ type: 'text', text: planMarkdown(raw.entries) });
    }
    // Event types from a newer writer are skipped rather than failing the whole run.
  }
  return events;
}

/**
 * Check and normalise raw MIME data into a RunRecord.
 *
 * Missing or mistyped fields get neutral defaults so a partly written record still draws;
 * data that is not a record at all, or a version this renderer does not know, raises a
 * RecordError whose message the renderer shows in place of the run.
 */
export function parseRecord(data: unknown): RunRecord {
  if (!isObject(data)) {
    throw new RecordError(
      `expected a JSON object, got ${Array.isArray(data) ? 'an array' : typeof data}`
    );
  }
  if (data.version !== SUPPORTED_VERSION) {
    throw new RecordError(
      `unsupported run record version ${JSON.stringify(data.version)} ` +
        `(this extension reads version ${SUPPORTED_VERSION}; upgrade aimu-jupyter)`
    );
  }
  const status = str(data.status, 'running');
  const usage = isObject(data.usage) ? data.usage : {};
  const replayed = isObject(data.replayed) ? str(data.replayed.note) : '';
  return {
    version: SUPPORTED_VERSION,
    prompt: str(data.prompt),
    ...(typeof data.prompt_markdown === 'string' && data.prompt_markdown
      ? { prompt_markdown: data.prompt_markdown }
      : {}),
    model: str(data.model),
    status: (RUN_STATUSES.has(status) ? status : 'running') as RunStatus,
    error: typeof data.error === 'string' && data.error ? data.error : null,
    usage: { input_tokens: num(usage.input_tokens), output_tokens: num(usage.output_tokens) },
    duration_s: num(data.duration_s),
    events: parseEvents(data.events, 0),
    inbox: typeof data.inbox === 'string' && data.inbox ? data.inbox : null,
    ...(replayed ? { replayed } : {}),
    ...(typeof data.limit === 'string' && data.limit ? { limit: data.limit } : {}),
    run: str(data.run)
  };
}

/* ---------------------------------------------------------------- view model */

export interface TextItem {
  kind: 'text' | 'thinking' | 'user_message';
  key: string;
  text: string;
  /** A validated answer as `[field, value]` rows, drawn as a table instead of the text. */
  output: [string, string][] | null;
}

export interface ImageItem {
  src: string;
  alt: string;
}

export interface ToolItem {
  kind: 'tool';
  key: string;
  name: string;
  status: ToolStatus;
  statusLabel: string;
  /** One line of `name=value` pairs shown beside the tool name while the card is closed. */
  preview: string;
  argumentsJson: string;
  /** The arguments in the model's order: code as code (`language` set), the rest as text. */
  args: ArgumentItem[];
  progress: string[];
  result: string | null;
  isError: boolean;
  images: ImageItem[];
  imagesNote: string;
  /** The code of a `python` tool call, offered as a new notebook cell; else null. */
  code: string | null;
  approval: { approved: boolean; label: string } | null;
  children: Item[];
}

export interface ArgumentItem {
  name: string;
  text: string;
  /** The language of an argument that is code (`''`: plain file text); null: not code. */
  language: string | null;
  /** A code argument as the kernel fenced it, to render as Markdown (highlighted); else null. */
  markdown: string | null;
}

export type Item = TextItem | ToolItem;

export interface RunView {
  prompt: string;
  /** Set: the prompt is shown as this Markdown instead of as text. */
  promptMarkdown: string | null;
  status: RunStatus;
  statusLabel: string;
  error: string | null;
  footer: string;
  items: Item[];
}

const TOOL_STATUS_LABELS: Record<ToolStatus, string> = {
  awaiting_approval: 'awaiting approval',
  running: 'running',
  done: 'done',
  error: 'error',
  denied: 'denied',
  stopped: 'stopped by you'
};

const RUN_STATUS_LABELS: Record<RunStatus, string> = {
  running: 'running…',
  done: 'done',
  interrupted: 'stopped by you',
  error: 'failed',
  unfinished: 'did not finish'
};

/** What a record still marked running says once its run is known to be gone. */
export const UNFINISHED = 'did not finish: the kernel stopped';

/**
 * A running record whose run no longer goes on in any kernel (the notebook was reopened
 * after the kernel stopped): it says so, and its open calls say they did not finish.
 */
export function asUnfinished(record: RunRecord): RunRecord {
  if (record.status !== 'running') {
    return record;
  }
  const close = (events: RunEvent[]): RunEvent[] =>
    events.map(event => {
      if (event.type !== 'tool') {
        return event;
      }
      const open = event.status === 'running' || event.status === 'awaiting_approval';
      return {
        ...event,
        status: open ? 'error' : event.status,
        is_error: open || event.is_error,
        result: open && event.result === null ? 'Not finished: the kernel stopped.' : event.result,
        children: close(event.children)
      };
    });
  return { ...record, status: 'unfinished', error: UNFINISHED, events: close(record.events) };
}

const PREVIEW_LIMIT = 80;

/** `0.4 s`, `12.3 s`, `2 min 05 s`. */
export function formatDuration(seconds: number): string {
  if (seconds < 60) {
    return `${seconds.toFixed(1)} s`;
  }
  const whole = Math.round(seconds);
  const minutes = Math.floor(whole / 60);
  const rest = String(whole % 60).padStart(2, '0');
  return `${minutes} min ${rest} s`;
}

/** `1234567` → `1,234,567` whatever the browser locale, so screenshots and tests agree. */
export function formatCount(n: number): string {
  return Math.round(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Footer line: model, token usage, wall time, what a response cache replayed and a stop at
 * the limit of tool rounds; parts that are unknown are left out. */
export function footerText(record: RunRecord): string {
  const parts: string[] = [];
  if (record.model) {
    parts.push(record.model);
  }
  const { input_tokens, output_tokens } = record.usage;
  if (input_tokens || output_tokens) {
    parts.push(`${formatCount(input_tokens)} in / ${formatCount(output_tokens)} out tokens`);
  }
  if (record.duration_s > 0) {
    parts.push(formatDuration(record.duration_s));
  }
  if (record.replayed) {
    parts.push(record.replayed);
  }
  if (record.limit) {
    parts.push(record.limit);
  }
  return parts.join(' · ');
}

/** Who decided a tool call and why, as one sentence. */
export function approvalLabel(approval: ApprovalRecord): string {
  const verb = approval.approved ? 'Approved' : 'Denied';
  let who: string;
  if (approval.by === 'always') {
    const at = approval.chosen_at ? `chosen at ${approval.chosen_at}` : 'chosen here';
    return `Allowed: Always allow, ${at}`;
  }
  if (approval.by === 'user') {
    who = `${verb} by you`;
  } else if (approval.by === 'timeout') {
    who = `Timed out waiting for approval: ${verb.toLowerCase()} by policy`;
  } else {
    who = `${verb} by policy`;
  }
  return approval.reason ? `${who} (${approval.reason})` : who;
}

/** A string as a person reads it in a one-line preview: quoted, its own quotes unescaped. */
function quoted(text: string): string {
  return text.includes('"') && !text.includes("'") ? `'${text}'` : `"${text}"`;
}

function compact(value: unknown): string {
  if (typeof value === 'string') {
    return quoted(value);
  }
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A validated answer as `[field, value]` rows: strings as they are, the rest as JSON. */
export function outputRows(output: Record<string, unknown>): [string, string][] {
  return Object.entries(output).map(([name, value]) => [
    name,
    typeof value === 'string' ? value : prettyJson(value).replace(/\s*\n\s*/g, ' ')
  ]);
}

/** The argument names of a call in the model's order, then any the order does not name. */
export function orderedNames(args: Record<string, unknown>, order: readonly string[]): string[] {
  const known = order.filter(name => name in args);
  return [...known, ...Object.keys(args).filter(name => !known.includes(name))];
}

function codePreview(text: string): string {
  const lines = text.split('\n').filter(line => line.trim());
  const first = (lines[0] ?? '').trim();
  return lines.length > 1 ? `${first} … (${lines.length} lines)` : first;
}

/** `url="https://…", depth=2`, cut to a single short line; code shows its first line. */
export function argumentsPreview(
  args: unknown,
  order: readonly string[] = [],
  code: Record<string, string> = {}
): string {
  const text = isObject(args)
    ? orderedNames(args, order)
        .map(name => {
          const value = args[name];
          const shown =
            name in code && typeof value === 'string' ? codePreview(value) : compact(value);
          return `${name}=${shown}`;
        })
        .join(', ')
    : compact(args);
  const oneLine = text.replace(/\s+/g, ' ');
  return oneLine.length > PREVIEW_LIMIT ? `${oneLine.slice(0, PREVIEW_LIMIT - 1)}…` : oneLine;
}

/** A progress entry as text: strings as they are, anything else as compact JSON. */
export function progressText(entry: unknown): string {
  return typeof entry === 'string' ? entry : compact(entry);
}

function prettyJson(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** The tool whose calls carry notebook code, and so can become cells. */
export const PYTHON_TOOL = 'python';

/** The code of a python call that ran (not one waiting, denied or stopped). */
function pythonCode(event: ToolEvent): string | null {
  const ran = event.status === 'done' || (event.status === 'error' && event.result !== null);
  if (event.name !== PYTHON_TOOL || !isObject(event.arguments) || !ran) {
    return null;
  }
  const code = event.arguments.code;
  return typeof code === 'string' && code.trim() ? code : null;
}

function argumentItems(event: ToolEvent): ArgumentItem[] {
  const args = shownArguments(event);
  if (!isObject(args)) {
    return [{ name: '', text: prettyJson(args), language: null, markdown: null }];
  }
  return orderedNames(args, event.argument_names).map(name => {
    const value = args[name];
    const isCode = name in event.code && typeof value === 'string';
    return {
      name,
      text: typeof value === 'string' ? value : prettyJson(value),
      language: isCode ? event.code[name] : null,
      markdown: (isCode && event.code_markdown?.[name]) || null
    };
  });
}

/** The arguments as drawn: the kernel's visible form of any text that needs one. */
function shownArguments(event: ToolEvent): unknown {
  const shown = event.shown?.arguments;
  return shown && isObject(event.arguments) ? { ...event.arguments, ...shown } : event.arguments;
}

function toItems(events: RunEvent[]): Item[] {
  const seen = new Set<string>();
  return events.map((event, index) => {
    if (event.type !== 'tool') {
      return {
        kind: event.type,
        key: `${event.type}:${index}`,
        text: event.text,
        output: event.output ? outputRows(event.output) : null
      };
    }
    // Keys must be unique among siblings; a repeated or missing id falls back to the position.
    let key = event.id ? `tool:${event.id}` : `tool@${index}`;
    if (seen.has(key)) {
      key = `${key}@${index}`;
    }
    seen.add(key);
    return {
      kind: 'tool',
      key,
      name: event.name,
      status: event.status,
      statusLabel: TOOL_STATUS_LABELS[event.status],
      preview: argumentsPreview(shownArguments(event), event.argument_names, event.code),
      argumentsJson: prettyJson(event.arguments),
      args: argumentItems(event),
      progress: event.progress.map(progressText),
      result: event.shown?.result ?? event.result,
      isError: event.is_error || event.status === 'error',
      images: event.images.map(image => ({
        src: `data:${image.mime_type};base64,${image.data.replace(/\s+/g, '')}`,
        alt: image.description || `image returned by ${event.name}`
      })),
      imagesNote: event.images_note,
      code: pythonCode(event),
      approval: event.approval
        ? { approved: event.approval.approved, label: approvalLabel(event.approval) }
        : null,
      children: toItems(event.children)
    };
  });
}

/** Everything the DOM layer draws, derived from one record. */
export function toView(record: RunRecord): RunView {
  return {
    prompt: record.prompt,
    promptMarkdown: record.prompt_markdown ?? null,
    status: record.status,
    statusLabel: RUN_STATUS_LABELS[record.status],
    error: record.error,
    footer: footerText(record),
    items: toItems(record.events)
  };
}

/* ---------------------------------------------------------------- keyed diff */

export interface Plan {
  /** For each item of the new list, in order: make a node, refresh one, or leave it alone. */
  steps: { key: string; op: 'create' | 'update' | 'keep' }[];
  /** Keys of the old list that are gone. */
  removed: string[];
}

function sameStrings(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}

/**
 * Whether an item's own content (children excluded: they are diffed on their own) is unchanged.
 */
export function sameContent(a: Item, b: Item): boolean {
  if (a.kind !== b.kind) {
    return false;
  }
  if (a.kind !== 'tool' || b.kind !== 'tool') {
    const [x, y] = [a as TextItem, b as TextItem];
    return x.text === y.text && JSON.stringify(x.output) === JSON.stringify(y.output);
  }
  return (
    a.name === b.name &&
    a.status === b.status &&
    a.argumentsJson === b.argumentsJson &&
    a.result === b.result &&
    a.isError === b.isError &&
    a.imagesNote === b.imagesNote &&
    a.code === b.code &&
    a.approval?.label === b.approval?.label &&
    a.approval?.approved === b.approval?.approved &&
    sameStrings(a.progress, b.progress) &&
    sameStrings(
      a.images.map(i => i.src + i.alt),
      b.images.map(i => i.src + i.alt)
    )
  );
}

function sameTree(a: Item, b: Item): boolean {
  if (!sameContent(a, b)) {
    return false;
  }
  if (a.kind !== 'tool' || b.kind !== 'tool') {
    return true;
  }
  return (
    a.children.length === b.children.length &&
    a.children.every(
      (child, i) => child.key === b.children[i].key && sameTree(child, b.children[i])
    )
  );
}

/**
 * Plan the smallest set of node changes that turns `previous` into `next`.
 *
 * Items are matched by key; an item whose key exists but whose kind changed is recreated.
 * A tool whose own fields are unchanged but whose nested run changed is an update: the node
 * stays, its child list is diffed in turn.
 */
export function planUpdate(previous: readonly Item[], next: readonly Item[]): Plan {
  const before = new Map(previous.map(item => [item.key, item]));
  const after = new Map(next.map(item => [item.key, item]));
  const steps = next.map(item => {
    const old = before.get(item.key);
    if (!old || old.kind !== item.kind) {
      return { key: item.key, op: 'create' as const };
    }
    return { key: item.key, op: sameTree(old, item) ? ('keep' as const) : ('update' as const) };
  });
  const removed = previous
    .filter(item => after.get(item.key)?.kind !== item.kind)
    .map(item => item.key);
  return { steps, removed };
}
