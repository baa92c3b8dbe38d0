/**
 * Opening a citation at its lines: a note inside the Jupyter root opens in Lab's editor with exactly
 * the cited lines selected and scrolled into view; a note outside the root opens as a read-only view
 * of the note (served by the server extension) with the cited lines marked and in view.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, Notification } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { Widget } from '@lumino/widgets';

import { INote, requestAPI } from './api';

/** A cited line range in a note: where to open it (Lab path) or how to ask the server for it. */
export interface ICitation {
  /** Path relative to the Jupyter root (may start with `..` when the note is outside it). */
  labPath?: string | null;
  /** Path inside the server's notes folder (the side panel's items). */
  notePath?: string;
  start: number;
  end: number;
}

export function isOutsideRoot(labPath: string): boolean {
  return labPath === '..' || labPath.startsWith('../');
}

/** The Lab path of a link written relative to a notebook's folder (the kernel's working folder). */
export function resolveFrom(notebookPath: string, relative: string): string {
  const joined = PathExt.join(PathExt.dirname(notebookPath), relative);
  return PathExt.normalize(joined);
}

export async function openCitation(
  app: JupyterFrontEnd,
  docManager: IDocumentManager,
  citation: ICitation
): Promise<void> {
  await app.restored;
  const { labPath, start, end } = citation;
  try {
    if (labPath && !isOutsideRoot(labPath)) {
      await openInEditor(docManager, labPath, start, end);
      return;
    }
    const query: Record<string, string> = citation.notePath
      ? { note: citation.notePath }
      : { path: labPath ?? '' };
    const note = await requestAPI<INote>('note', {}, query);
    if (note.lab_path && !isOutsideRoot(note.lab_path)) {
      await openInEditor(docManager, note.lab_path, start, end);
      return;
    }
    showReadOnly(app, note, start, end);
  } catch (error) {
    Notification.error(`Cannot open ${labPath ?? citation.notePath}:${start}-${end}: ${(error as Error).message}`, {
      autoClose: 8000
    });
  }
}

async function openInEditor(docManager: IDocumentManager, path: string, start: number, end: number): Promise<void> {
  const widget = docManager.openOrReveal(path, 'Editor');
  if (!widget) {
    throw new Error(`Lab has no editor for ${path}`);
  }
  await widget.context.ready;
  await widget.revealed;
  const editor = (widget.content as any).editor;
  if (!editor || typeof editor.setSelection !== 'function') {
    throw new Error(`${path} did not open in a text editor`);
  }
  const lastLine = Math.min(end, editor.lineCount) - 1;
  const range = {
    start: { line: start - 1, column: 0 },
    end: { line: lastLine, column: (editor.getLine(lastLine) ?? '').length }
  };
  editor.setSelection(range);
  editor.revealSelection(range);
  editor.focus();
}

/** A read-only view of a note outside the root: every line numbered, the cited ones marked. */
export class NoteView extends Widget {
  constructor(note: INote, start: number, end: number) {
    super();
    this.addClass('rk-note-view');
    const head = document.createElement('div');
    head.className = 'rk-note-head';
    head.textContent = `${note.path} · lines ${start}-${end} · read-only: the note is outside the Jupyter root`;
    const body = document.createElement('pre');
    body.className = 'rk-note-lines';
    note.lines.forEach((text, index) => {
      const line = document.createElement('div');
      const number = index + 1;
      line.className = number >= start && number <= end ? 'rk-line rk-cited' : 'rk-line';
      line.dataset.line = String(number);
      const gutter = document.createElement('span');
      gutter.className = 'rk-ln';
      gutter.textContent = String(number).padStart(String(note.lines.length).length, ' ') + ' ';
      line.append(gutter, document.createTextNode(text || '\u200b'));
      body.appendChild(line);
    });
    this.node.append(head, body);
    this.start = start;
  }

  protected onAfterAttach(): void {
    this.node.querySelector(`[data-line="${this.start}"]`)?.scrollIntoView({ block: 'center' });
  }

  private start: number;
}

function showReadOnly(app: JupyterFrontEnd, note: INote, start: number, end: number): void {
  const content = new NoteView(note, start, end);
  const widget = new MainAreaWidget({ content });
  widget.id = `rk-note-${Date.now()}`;
  widget.title.label = `${PathExt.basename(note.path)}:${start}-${end} (read-only)`;
  widget.title.closable = true;
  app.shell.add(widget, 'main');
  app.shell.activateById(widget.id);
}
