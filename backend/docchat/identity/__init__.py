"""Who a person is elsewhere: logins through a company directory (LDAP), and the accounts,
links and group memberships they bring."""
