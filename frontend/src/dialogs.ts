import { useEffect, useRef, type RefObject } from "react";

/** A native <dialog> shown modally while `open` (the browser traps the focus, Escape closes
 * it and fires its `close` event): the ref to put on it. */
export function useModalDialog(open: boolean): RefObject<HTMLDialogElement | null> {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const node = dialog.current;
    if (!node) return;
    if (open && !node.open) node.showModal?.();
    if (!open && node.open) node.close();
  }, [open]);
  return dialog;
}
