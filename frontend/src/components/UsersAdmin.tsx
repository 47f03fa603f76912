import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { api, type Schemas } from "../api/client";
import { failureText, latestFailure, unwrap, useWrite } from "../api/mutations";
import { keys } from "../api/queries";
import { useModalDialog } from "../dialogs";
import { counted } from "../format";
import Pager from "./Pager";

type AdminUser = Schemas["AdminUserRead"];
type Role = Schemas["Role"];
const PAGE = 20;
const ADMIN_USERS = [...keys.admin, "users"] as const;

/** A quota as the table shows it: null is the server's default, 0 no limit. */
function quota(value: number | null | undefined, unit: string): string {
  if (value == null) return "default";
  return value === 0 ? "no limit" : `${value.toLocaleString()} ${unit}`;
}

/** A number field's text as a quota: empty is the server's default. */
function quotaValue(text: string): number | null {
  return text.trim() === "" ? null : Math.max(0, Math.round(Number(text)));
}

/** The quotas of one account, edited in its row: empty is the server's default, 0 no limit. */
function QuotaEditor({ user, onSave, onCancel }: { user: AdminUser; onSave(body: Schemas["AdminUserUpdate"]): void; onCancel(): void }) {
  const [tokens, setTokens] = useState(user.daily_token_limit?.toString() ?? "");
  const [storage, setStorage] = useState(user.storage_limit_mb?.toString() ?? "");
  return (
    <form
      className="quota-editor"
      aria-label={`Quotas of ${user.email}`}
      onSubmit={(event) => {
        event.preventDefault();
        onSave({ daily_token_limit: quotaValue(tokens), storage_limit_mb: quotaValue(storage) });
      }}
    >
      <label>
        Tokens a day
        <input type="number" min={0} value={tokens} placeholder="default" onChange={(e) => setTokens(e.target.value)} />
      </label>
      <label>
        Storage (MB)
        <input type="number" min={0} value={storage} placeholder="default" onChange={(e) => setStorage(e.target.value)} />
      </label>
      <span className="muted small">Empty: the server's default; 0: no limit.</span>
      <button type="submit" className="primary">
        Save
      </button>
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
    </form>
  );
}

/** Deleting an account: what it holds, and for what others read, a choice between handing
 * it to another account (by email) and deleting it too. */
function DeleteUser({ user, onClose, onDeleted }: { user: AdminUser; onClose(): void; onDeleted(): void }) {
  const dialog = useModalDialog(true);
  const [choice, setChoice] = useState<"transfer" | "delete">("transfer");
  const [heir, setHeir] = useState("");
  const plan = useQuery({
    queryKey: [...ADMIN_USERS, user.id, "deletion"],
    queryFn: async () =>
      (await api.GET("/api/v1/admin/users/{user_id}/deletion", { params: { path: { user_id: user.id } } })).data ?? null,
  }).data;
  const reliedOn = plan ? plan.relied_on_documents.length + plan.relied_on_collections.length : 0;

  async function heirId(): Promise<string | null> {
    const { data } = await api.GET("/api/v1/admin/users", { params: { query: { q: heir.trim(), active: true, limit: 5 } } });
    return data?.items.find((candidate) => candidate.email.toLowerCase() === heir.trim().toLowerCase())?.id ?? null;
  }

  const destroy = useWrite({
    async write() {
      let query: { others_documents?: "transfer" | "delete"; transfer_to?: string } = {};
      if (reliedOn > 0 && choice === "transfer") {
        const id = await heirId();
        if (!id) throw new Error(`No active account has the email ${heir.trim() || "given"}`);
        query = { others_documents: "transfer", transfer_to: id };
      } else if (reliedOn > 0) query = { others_documents: "delete" };
      await unwrap(api.DELETE("/api/v1/admin/users/{user_id}", { params: { path: { user_id: user.id }, query } }), "The account could not be deleted");
    },
    invalidates: [keys.admin],
    onSuccess: onDeleted,
  });
  const error = destroy.error ? failureText(destroy.error) : null;
  const working = destroy.isPending;

  function remove(event: FormEvent) {
    event.preventDefault();
    destroy.mutate();
  }

  return (
    <dialog ref={dialog} aria-labelledby="delete-user-title" onClose={onClose}>
      <form className="stack" onSubmit={(event) => void remove(event)}>
        <h2 id="delete-user-title">Delete {user.email}?</h2>
        {plan && (
          <p className="small">
            {counted(plan.documents, "document")}, {counted(plan.chats, "chat")} and {counted(plan.api_keys, "API key")} go for
            good, with their files and search index; the audit log keeps its entries under another name.
          </p>
        )}
        {plan && reliedOn > 0 && (
          <fieldset>
            <legend>Others read some of it</legend>
            <ul className="small">
              {plan.relied_on_documents.slice(0, 5).map((document) => (
                <li key={document.id}>
                  {document.filename}{" "}
                  <span className="muted">
                    ({document.shared_with_everyone ? "shared with everyone" : `in ${document.collections.join(", ")}`})
                  </span>
                </li>
              ))}
              {plan.relied_on_documents.length > 5 && <li className="muted">and {plan.relied_on_documents.length - 5} more</li>}
              {plan.relied_on_collections.map((collection) => (
                <li key={collection.id}>
                  collection {collection.name} <span className="muted">({counted(collection.members, "other member")})</span>
                </li>
              ))}
            </ul>
            <label className="choice">
              <input type="radio" name="others" checked={choice === "transfer"} onChange={() => setChoice("transfer")} />
              Give them to
              <input
                type="email"
                aria-label="Email of the account that takes them over"
                placeholder="colleague@example.com"
                value={heir}
                required={choice === "transfer"}
                disabled={choice !== "transfer"}
                onChange={(e) => setHeir(e.target.value)}
              />
            </label>
            <label className="choice">
              <input type="radio" name="others" checked={choice === "delete"} onChange={() => setChoice("delete")} />
              Delete them too
            </label>
          </fieldset>
        )}
        {error && (
          <p role="alert" className="error small">
            {error}
          </p>
        )}
        <div className="row">
          <button type="submit" className="danger" disabled={!plan || working}>
            Delete account
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </dialog>
  );
}

/** Accounts: search, add (with a temporary password), role, quotas, last activity,
 * deactivate/reactivate, reset password, delete (a person's request waits here). */
export default function UsersAdmin({ currentUserId }: { currentUserId: string }) {
  const [skip, setSkip] = useState(0);
  const [query, setQuery] = useState("");
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>("user");
  const [handover, setHandover] = useState<{ email: string; password: string } | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<AdminUser | null>(null);

  // One cached page per search and offset: a late reply for what was typed before fills its
  // own entry, never the page on screen (a plain effect showed whichever reply came last).
  const { data } = useQuery({
    queryKey: [...ADMIN_USERS, query, skip],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      (await api.GET("/api/v1/admin/users", { params: { query: { q: query || undefined, skip, limit: PAGE } } })).data ?? null,
  });
  const users: AdminUser[] = data?.items ?? [];
  const total = data?.total ?? 0;
  // A change here shows at once in the users, the usage totals and the audit log.
  const changes = { invalidates: [keys.admin] };
  const add = useWrite({
    write: () =>
      unwrap(api.POST("/api/v1/admin/users", { body: { email, role, display_name: "", must_change_password: true } }), "The user could not be added"),
    onSuccess(created) {
      setHandover({ email: created.email, password: created.temporary_password ?? "" });
      setEmail("");
    },
    ...changes,
  });
  // A refused change is read again too: the row shows what the server kept.
  const update = useWrite({
    write: ({ user, body }: { user: AdminUser; body: Schemas["AdminUserUpdate"] }) =>
      unwrap(api.PATCH("/api/v1/admin/users/{user_id}", { params: { path: { user_id: user.id } }, body }), "The change was refused"),
    invalidateOnError: true,
    ...changes,
  });
  const reset = useWrite({
    write: (user: AdminUser) =>
      unwrap(api.POST("/api/v1/admin/users/{user_id}/reset-password", { params: { path: { user_id: user.id } } }), "The password could not be reset"),
    onSuccess: (done, user) => setHandover({ email: user.email, password: done.temporary_password }),
    ...changes,
  });
  const error = latestFailure(add, update, reset);

  function create(event: FormEvent) {
    event.preventDefault();
    add.mutate();
  }

  function resetPassword(user: AdminUser) {
    if (window.confirm(`Reset the password of ${user.email}? Their sessions end now.`)) reset.mutate(user);
  }

  return (
    <>
      <form onSubmit={create} className="row wrap" aria-label="Add a user">
        <label className="grow">
          <span className="sr-only">Email of the new user</span>
          <input type="email" required placeholder="new.colleague@example.com" value={email} onChange={(e) => setEmail(e.target.value)} />
        </label>
        <label>
          <span className="sr-only">Role of the new user</span>
          <select value={role} onChange={(e) => setRole(e.target.value as Role)}>
            <option value="user">user</option>
            <option value="admin">admin</option>
          </select>
        </label>
        <button type="submit" className="primary">
          Add user
        </button>
      </form>
      {handover && (
        <div className="notice" role="status">
          <p>
            Temporary password for <strong>{handover.email}</strong> (shown once; they choose their own at first login):
          </p>
          <code className="secret" data-testid="temporary-password">{handover.password}</code>
          <button type="button" onClick={() => setHandover(null)}>
            Done
          </button>
        </div>
      )}
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <label>
        <span className="sr-only">Search users</span>
        <input type="search" placeholder="Search by email or name" value={query} onChange={(e) => { setQuery(e.target.value); setSkip(0); }} />
      </label>
      <div className="table-scroll" tabIndex={0} role="region" aria-label="Users table">
        <table>
          <caption className="sr-only">Users</caption>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Status</th>
              <th scope="col">Last active</th>
              <th scope="col">Quotas</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {users.map((user) => (
              <tr key={user.id}>
                <td>
                  {user.email}
                  {user.must_change_password && <span className="muted"> (temporary password)</span>}
                </td>
                <td>
                  <select aria-label={`Role of ${user.email}`} value={user.role} onChange={(e) => update.mutate({ user, body: { role: e.target.value as Role } })}>
                    <option value="user">user</option>
                    <option value="admin">admin</option>
                  </select>
                </td>
                <td>
                  {user.is_active ? "active" : "deactivated"}
                  {user.deletion_requested_at && (
                    <span className="badge" title={`Asked on ${new Date(user.deletion_requested_at).toLocaleString()}`}>
                      {" "}
                      deletion requested
                    </span>
                  )}
                </td>
                <td>{user.last_active_at ? new Date(user.last_active_at).toLocaleString() : <span className="muted">never</span>}</td>
                <td>
                  {editing === user.id ? (
                    <QuotaEditor
                      user={user}
                      onCancel={() => setEditing(null)}
                      onSave={(body) => {
                        setEditing(null);
                        update.mutate({ user, body });
                      }}
                    />
                  ) : (
                    <>
                      {quota(user.daily_token_limit, "tokens/day")} · {quota(user.storage_limit_mb, "MB")}{" "}
                      <button type="button" className="link small" onClick={() => setEditing(user.id)} aria-label={`Edit the quotas of ${user.email}`}>
                        Edit
                      </button>
                    </>
                  )}
                </td>
                <td className="row">
                  {user.id !== currentUserId && (
                    <button type="button" onClick={() => update.mutate({ user, body: { is_active: !user.is_active } })}>
                      {user.is_active ? "Deactivate" : "Reactivate"}
                    </button>
                  )}
                  <button type="button" onClick={() => resetPassword(user)}>
                    Reset password
                  </button>
                  {user.id !== currentUserId && (
                    <button type="button" className="danger-text" onClick={() => setDeleting(user)} aria-label={`Delete ${user.email}`}>
                      Delete…
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Pager skip={skip} limit={PAGE} total={total} onSkip={setSkip} label="User pages" empty="No users" />
      {deleting && (
        <DeleteUser
          user={deleting}
          onClose={() => setDeleting(null)}
          onDeleted={() => setDeleting(null)}
        />
      )}
    </>
  );
}
