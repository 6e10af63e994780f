import FoundationEssentials
import Glibc

/// Who may change the agent's state: root, the daemon's own user, and members of a group.
enum CallerAuthorisation {
    static func mayControl(uid: uid_t, group: String) -> Bool {
        if uid == 0 || uid == getuid() { return true }
        guard let account = getpwuid(uid), let name = account.pointee.pw_name, let entry = getgrnam(group) else { return false }
        let wanted = entry.pointee.gr_gid
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, account.pointee.pw_gid, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(name, account.pointee.pw_gid, &groups, &count) >= 0 else { return false }
        }
        return groups.prefix(Int(count)).contains(wanted)
    }
}
