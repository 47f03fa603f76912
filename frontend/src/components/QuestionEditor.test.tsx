import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import QuestionEditor from "./QuestionEditor";

afterEach(cleanup);

function edit(later = 0) {
  const onSend = vi.fn();
  const onCancel = vi.fn();
  render(<QuestionEditor original="When did the bridge open?" later={later} onSend={onSend} onCancel={onCancel} />);
  return { onSend, onCancel, box: screen.getByLabelText("Edit your question") as HTMLTextAreaElement };
}

describe("QuestionEditor", () => {
  it("offers the question as it was, to ask again unchanged", () => {
    const { box, onSend } = edit();
    expect(box.value).toBe("When did the bridge open?");
    fireEvent.click(screen.getByRole("button", { name: "Ask again" }));
    expect(onSend).toHaveBeenCalledWith("When did the bridge open?");
  });

  it("sends the edited question, trimmed, with Enter; Shift+Enter adds a line", () => {
    const { box, onSend } = edit();
    fireEvent.change(box, { target: { value: "  When did the tunnel open?  " } });
    expect(screen.getByRole("button", { name: "Send" })).toBeTruthy();
    fireEvent.keyDown(box, { key: "Enter", shiftKey: true });
    expect(onSend).not.toHaveBeenCalled();
    fireEvent.keyDown(box, { key: "Enter" });
    expect(onSend).toHaveBeenCalledWith("When did the tunnel open?");
  });

  it("cancels with Escape or Cancel, and sends nothing empty", () => {
    const { box, onSend, onCancel } = edit();
    fireEvent.keyDown(box, { key: "Escape" });
    fireEvent.click(screen.getByRole("button", { name: "Cancel" }));
    expect(onCancel).toHaveBeenCalledTimes(2);
    fireEvent.change(box, { target: { value: "   " } });
    fireEvent.keyDown(box, { key: "Enter" });
    expect(onSend).not.toHaveBeenCalled();
    expect((screen.getByRole("button", { name: "Ask again" }) as HTMLButtonElement).disabled).toBe(true);
  });

  it("says what sending replaces", () => {
    edit(1);
    expect(screen.getByText(/replaces this question and the answer after it/)).toBeTruthy();
    cleanup();
    edit(3);
    expect(screen.getByText(/replaces this question and the 3 messages after it/)).toBeTruthy();
  });
});
