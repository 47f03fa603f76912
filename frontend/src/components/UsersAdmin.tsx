import { useCallback, useEffect, useState, type FormEvent } from "react";
import { api, errorMessage, type Schemas } from "../api/client";
import Pager from "./Pager";

type AdminUser = Schemas["AdminUserRead"];
type Role = Schemas["Role"];
const PAGE = 20;

/** Accounts: search, add (with a temporary password), role, deactivate/reactivate, reset password. */
export default function UsersAdmin({ currentUserId, onChanged }: { currentUserId: string; onChanged: () => void }) {
  const [users, setUsers] = useState<AdminUser[]>([]);
  const [total, setTotal] = useState(0);
  const [skip, setSkip] = useState(0);
  const [query, setQuery] = useState("");
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>("user");
  const [handover, setHandover] = useState<{ email: string; password: string } | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(async () => {
    const { data } = await api.GET("/api/v1/admin/users", { params: { query: { q: query || undefined, skip, limit: PAGE } } });
    setUsers(data?.items ?? []);
    setTotal(data?.total ?? 0);
  }, [query, skip]);
  useEffect(() => void load(), [load]);

  async function create(event: FormEvent) {
    event.preventDefault();
    setError(null);
    const { data, error: failure } = await api.POST("/api/v1/admin/users", { body: { email, role, display_name: "", must_change_password: true } });
    if (!data) {
      setError(errorMessage(failure, "The user could not be added"));
      return;
    }
    setHandover({ email: data.email, password: data.temporary_password ?? "" });
    setEmail("");
    onChanged();
    await load();
  }

  async function update(user: AdminUser, body: Schemas["AdminUserUpdate"]) {
    setError(null);
    const { error: failure } = await api.PATCH("/api/v1/admin/users/{user_id}", { params: { path: { user_id: user.id } }, body });
    if (failure) setError(errorMessage(failure, "The change was refused"));
    else onChanged();
    await load();
  }

  async function resetPassword(user: AdminUser) {
    if (!window.confirm(`Reset the password of ${user.email}? Their sessions end now.`)) return;
    const { data, error: failure } = await api.POST("/api/v1/admin/users/{user_id}/reset-password", { params: { path: { user_id: user.id } } });
    if (data) {
      setHandover({ email: user.email, password: data.temporary_password });
      onChanged();
    } else setError(errorMessage(failure, "The password could not be reset"));
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
                  <select aria-label={`Role of ${user.email}`} value={user.role} onChange={(e) => void update(user, { role: e.target.value as Role })}>
                    <option value="user">user</option>
                    <option value="admin">admin</option>
                  </select>
                </td>
                <td>{user.is_active ? "active" : "deactivated"}</td>
                <td className="row">
                  {user.id !== currentUserId && (
                    <button type="button" onClick={() => void update(user, { is_active: !user.is_active })}>
                      {user.is_active ? "Deactivate" : "Reactivate"}
                    </button>
                  )}
                  <button type="button" onClick={() => void resetPassword(user)}>
                    Reset password
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Pager skip={skip} limit={PAGE} total={total} onSkip={setSkip} label="User pages" empty="No users" />
    </>
  );
}
