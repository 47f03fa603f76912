import { useState, type FormEvent } from "react";
import { api, replaceTokens } from "../api/client";
import { failureText, unwrap, useWrite } from "../api/mutations";

/** Change the password; the server ends every other session and returns new tokens for this one. */
export default function PasswordForm({ onChanged, currentLabel = "Current password" }: { onChanged: () => void; currentLabel?: string }) {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const change = useWrite({
    write: () =>
      unwrap(
        api.POST("/api/v1/users/me/password", { body: { current_password: current, new_password: next } }),
        "The password could not be changed",
      ),
    onSuccess(tokens) {
      replaceTokens(tokens);
      setCurrent("");
      setNext("");
      onChanged();
    },
  });
  const error = change.error ? failureText(change.error) : null;

  function submit(event: FormEvent) {
    event.preventDefault();
    change.mutate();
  }

  return (
    <form onSubmit={submit} className="stack" aria-label="Change password">
      <label>
        {currentLabel}
        <input type="password" autoComplete="current-password" required value={current} onChange={(e) => setCurrent(e.target.value)} />
      </label>
      <label>
        New password
        <input type="password" autoComplete="new-password" minLength={8} required value={next} onChange={(e) => setNext(e.target.value)} />
      </label>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {change.isSuccess && <p role="status">Password changed. Other sessions of your account have been signed out.</p>}
      <button type="submit" className="primary" disabled={change.isPending}>
        Change password
      </button>
    </form>
  );
}
