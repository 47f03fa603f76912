import { useState, type FormEvent } from "react";
import { api, errorMessage, replaceTokens } from "../api/client";

/** Change the password; the server ends every other session and returns new tokens for this one. */
export default function PasswordForm({ onChanged, currentLabel = "Current password" }: { onChanged: () => void; currentLabel?: string }) {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setDone(false);
    const { data, error: failure } = await api.POST("/api/v1/users/me/password", {
      body: { current_password: current, new_password: next },
    });
    setBusy(false);
    if (!data) {
      setError(errorMessage(failure, "The password could not be changed"));
      return;
    }
    replaceTokens(data);
    setCurrent("");
    setNext("");
    setDone(true);
    onChanged();
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
      {done && <p role="status">Password changed. Other sessions of your account have been signed out.</p>}
      <button type="submit" className="primary" disabled={busy}>
        Change password
      </button>
    </form>
  );
}
