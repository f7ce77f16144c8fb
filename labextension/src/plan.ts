/**
 * An outside agent's plan (a record event `{type: 'plan', entries}`), drawn as a Markdown
 * checklist among the run's text: `[x]` done, `[ ]` to do, in progress in italics.
 */

const MARKS: Record<string, string> = { completed: 'x', in_progress: ' ', pending: ' ' };

/** The plan as Markdown; entries that are not `{content, status}` objects are skipped. */
export function planMarkdown(entries: readonly unknown[]): string {
  const lines = entries.flatMap(entry => {
    const e = entry as { content?: unknown; status?: unknown } | null;
    if (!e || typeof e.content !== 'string') {
      return [];
    }
    const status = typeof e.status === 'string' ? e.status : 'pending';
    const text = e.content.replace(/\s+/g, ' ').trim();
    const shown = status === 'in_progress' ? `*${text}* (in progress)` : text;
    return [`- [${MARKS[status] ?? ' '}] ${shown}`];
  });
  return `**Plan**\n\n${lines.join('\n')}`;
}
