/** jsdom has no DragEvent, which @lumino/dragdrop subclasses when loaded: give it a stand-in. */
const scope = globalThis as { DragEvent?: unknown };
if (scope.DragEvent === undefined) {
  scope.DragEvent = class DragEvent extends MouseEvent {};
}
export {};
