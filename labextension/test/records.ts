/** Builders for version-1 run records as the notebook layer writes them. */

export type Json = Record<string, unknown>;

export function run(events: Json[], extra: Json = {}): Json {
  return {
    version: 1,
    prompt: 'Which month grew fastest?',
    model: 'scripted:demo',
    status: 'running',
    error: null,
    usage: { input_tokens: 0, output_tokens: 0 },
    duration_s: 0,
    events,
    ...extra
  };
}

export function text(value: string): Json {
  return { type: 'text', text: value };
}

export function thinking(value: string): Json {
  return { type: 'thinking', text: value };
}

export function tool(id: string, name: string, extra: Json = {}): Json {
  return {
    type: 'tool',
    id,
    name,
    arguments: {},
    status: 'running',
    progress: [],
    result: null,
    is_error: false,
    images: [],
    approval: null,
    children: [],
    ...extra
  };
}

/** A 1×1 transparent PNG. */
export const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
