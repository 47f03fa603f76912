import { useEffect } from "react";
import { useModalDialog } from "../dialogs";

/** The keyboard shortcuts, as the help dialog lists them. */
export const SHORTCUTS: { keys: string[]; does: string }[] = [
  { keys: ["Ctrl", "Shift", "O"], does: "New chat" },
  { keys: ["Shift", "Esc"], does: "Go to the message box (also /)" },
  { keys: ["Esc"], does: "In the message box, while an answer is written: stop it" },
  { keys: ["Enter"], does: "Send (Shift+Enter: a new line)" },
  { keys: ["?"], does: "This list" },
];

function typingIn(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName);
}

export function focusComposer(): void {
  document.getElementById("composer")?.focus();
}

/** The chat page's shortcuts, wherever the focus is (/ and ? only when not typing). */
export function useShortcuts({ onNewChat, onHelp }: { onNewChat(): void; onHelp(): void }): void {
  useEffect(() => {
    function onKey(event: KeyboardEvent) {
      const command = event.ctrlKey || event.metaKey;
      if (command && event.shiftKey && event.key.toLowerCase() === "o") {
        event.preventDefault();
        onNewChat();
      } else if (event.shiftKey && event.key === "Escape") {
        event.preventDefault();
        focusComposer();
      } else if (!command && !event.altKey && !typingIn(event.target)) {
        if (event.key === "/") {
          event.preventDefault();
          focusComposer();
        } else if (event.key === "?") {
          event.preventDefault();
          onHelp();
        }
      }
    }
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [onNewChat, onHelp]);
}

/** The list of shortcuts, a modal dialog (Escape or the button closes it). */
export function ShortcutsDialog({ open, onClose }: { open: boolean; onClose(): void }) {
  const dialog = useModalDialog(open);
  return (
    <dialog ref={dialog} className="shortcuts" aria-labelledby="shortcuts-title" onClose={onClose}>
      <h2 id="shortcuts-title">Keyboard shortcuts</h2>
      <table>
        <tbody>
          {SHORTCUTS.map((shortcut) => (
            <tr key={shortcut.does}>
              <th scope="row">
                {shortcut.keys.map((key, index) => (
                  <span key={key}>
                    {index > 0 && "+"}
                    <kbd>{key}</kbd>
                  </span>
                ))}
              </th>
              <td>{shortcut.does}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="muted small">On a Mac, ⌘ works where Ctrl is written.</p>
      <button className="primary" onClick={onClose} autoFocus>
        Close
      </button>
    </dialog>
  );
}
