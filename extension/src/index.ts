/**
 * retrieval-kernel-lab: the Context side panel, the "Ask project notes" and "Insert %context cell"
 * commands, the index state in the status bar, and citations (in the panel, the explorer and
 * `%context` output) that open the note at exactly the cited lines.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { searchIcon } from '@jupyterlab/ui-components';

import { ICitation, openCitation, resolveFrom } from './citations';
import { ContextPanel, IPanelDefaults } from './panel';
import { IndexStatus } from './status';

const PLUGIN = 'retrieval-kernel-lab:plugin';
const COMMANDS = {
  ask: 'retrieval-kernel:ask',
  insert: 'retrieval-kernel:insert-context-cell',
  open: 'retrieval-kernel:open-citation',
  refresh: 'retrieval-kernel:refresh-index'
};

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN,
  description: 'Ask project notes from a side panel; open citations at their lines; see the index state.',
  autoStart: true,
  requires: [IDocumentManager],
  optional: [ICommandPalette, IStatusBar, INotebookTracker, ISettingRegistry, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    docManager: IDocumentManager,
    palette: ICommandPalette | null,
    statusBar: IStatusBar | null,
    notebooks: INotebookTracker | null,
    settingRegistry: ISettingRegistry | null,
    restorer: ILayoutRestorer | null
  ) => {
    const open = (citation: ICitation) => void openCitation(app, docManager, citation);
    const status = new IndexStatus();
    const panel = new ContextPanel(open, () => status.check());
    panel.title.icon = searchIcon;
    app.shell.add(panel, 'left', { rank: 600 });
    restorer?.add(panel, panel.id);

    if (statusBar) {
      statusBar.registerStatusItem('retrieval-kernel:index-state', { item: status, align: 'left', rank: 50 });
    }

    app.commands.addCommand(COMMANDS.ask, {
      label: 'Ask project notes',
      caption: 'Open the Context panel with the question box focused',
      execute: () => {
        app.shell.activateById(panel.id);
        panel.focusQuestion(selectedText(notebooks));
      }
    });
    app.commands.addCommand(COMMANDS.insert, {
      label: 'Insert %context cell for the selection',
      caption: 'Insert a code cell below asking %context about the selected text (or the current line)',
      isEnabled: () => !!notebooks?.currentWidget,
      execute: () => insertContextCell(notebooks)
    });
    app.commands.addCommand(COMMANDS.open, {
      label: 'Open a citation at its lines',
      execute: args =>
        openCitation(app, docManager, {
          labPath: args.path as string,
          start: Number(args.start),
          end: Number(args.end ?? args.start)
        })
    });
    app.commands.addCommand(COMMANDS.refresh, {
      label: 'Refresh the notes index',
      execute: () => status.refresh()
    });
    if (palette) {
      const category = 'Project notes';
      for (const command of [COMMANDS.ask, COMMANDS.insert, COMMANDS.refresh]) {
        palette.addItem({ command, category });
      }
    }

    if (settingRegistry) {
      void settingRegistry
        .load(PLUGIN)
        .then(settings => {
          const apply = () => panel.setDefaults(settings.composite as unknown as IPanelDefaults);
          apply();
          settings.changed.connect(apply);
        })
        .catch(reason => console.error('retrieval-kernel-lab: cannot load settings', reason));
    }

    // Citations rendered by the kernel (%context HTML output, the explorer): `a.rk-cite` with the note's
    // path relative to the notebook's folder and the cited lines. Caught before Lab's own link handling.
    document.addEventListener(
      'click',
      event => {
        const anchor = (event.target as HTMLElement | null)?.closest?.('a.rk-cite[data-rk-path]') as HTMLAnchorElement | null;
        if (!anchor || event.button !== 0 || event.ctrlKey || event.metaKey) {
          return;
        }
        const notebook = notebooks?.find(widget => widget.node.contains(anchor));
        const relative = anchor.dataset.rkPath ?? '';
        const labPath = notebook ? resolveFrom(notebook.context.path, relative) : relative;
        event.preventDefault();
        event.stopPropagation();
        open({ labPath, start: Number(anchor.dataset.rkStart), end: Number(anchor.dataset.rkEnd) });
      },
      true
    );
  }
};

function selectedText(notebooks: INotebookTracker | null): string {
  const editor = notebooks?.activeCell?.editor;
  if (!editor) {
    return '';
  }
  const { start, end } = editor.getSelection();
  const text = editor.model.sharedModel.getSource();
  const from = editor.getOffsetAt(start);
  const to = editor.getOffsetAt(end);
  return text.slice(Math.min(from, to), Math.max(from, to)).trim();
}

function insertContextCell(notebooks: INotebookTracker | null): void {
  const panel = notebooks?.currentWidget;
  const editor = notebooks?.activeCell?.editor;
  if (!panel || !editor) {
    return;
  }
  let question = selectedText(notebooks);
  if (!question) {
    const line = editor.getCursorPosition().line;
    question = (editor.getLine(line) ?? '').trim();
  }
  NotebookActions.insertBelow(panel.content);
  const cell = panel.content.activeCell;
  if (cell) {
    cell.model.sharedModel.setSource(`%context ${question.replace(/\s+/g, ' ')}`);
  }
}

export default plugin;
