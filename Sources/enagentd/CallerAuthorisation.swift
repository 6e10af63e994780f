import FoundationEssentials
import Glibc

/// Who may change the agent's state: root, the daemon's own user, and members of a group.
///
/// The lookups are the reentrant ones: calls are authorised on the bus's dispatcher thread and on
/// the detection queue at once, and getpwuid/getgrnam share one static buffer between threads, so
/// that one caller could be judged by another's account.
enum CallerAuthorisation {
    static func mayControl(uid: uid_t, group: String) -> Bool {
        if uid == 0 || uid == getuid() { return true }
        guard let (name, primaryGroup) = account(of: uid), let wanted = groupID(named: group) else { return false }
        return groups(of: name, primaryGroup: primaryGroup).contains(wanted)
    }

    /// The user's name and primary group, or nil when there is no such user (or the lookup failed:
    /// no rights then).
    private static func account(of uid: uid_t) -> (String, gid_t)? {
        withGrowingBuffer { buffer in
            var entry = passwd(), result: UnsafeMutablePointer<passwd>?
            let status = getpwuid_r(uid, &entry, buffer.baseAddress!, buffer.count, &result)
            guard status != ERANGE else { return .tooSmall }
            guard status == 0, result != nil, let name = entry.pw_name else { return .found(nil) }
            return .found((String(cString: name), entry.pw_gid))
        }
    }

    private static func groupID(named name: String) -> gid_t? {
        withGrowingBuffer { buffer in
            var entry = group(), result: UnsafeMutablePointer<group>?
            let status = getgrnam_r(name, &entry, buffer.baseAddress!, buffer.count, &result)
            guard status != ERANGE else { return .tooSmall }
            return .found(status == 0 && result != nil ? entry.gr_gid : nil)
        }
    }

    /// Every group of the user (getgrouplist reads the group database without shared buffers).
    private static func groups(of user: String, primaryGroup: gid_t) -> [gid_t] {
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(user, primaryGroup, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(user, primaryGroup, &groups, &count) >= 0 else { return [] }
        }
        return Array(groups.prefix(Int(count)))
    }

    private enum Lookup<T> {
        case found(T?)
        case tooSmall
    }

    /// Runs `body` with a buffer for a reentrant lookup, twice as large each time it is too small
    /// (ERANGE), up to 1 MB: an entry larger than that is no account to trust.
    private static func withGrowingBuffer<T>(_ body: (UnsafeMutableBufferPointer<CChar>) -> Lookup<T>) -> T? {
        var size = max(Int(sysconf(Int32(_SC_GETPW_R_SIZE_MAX))), 1024)
        while size <= 1 << 20 {
            var buffer = [CChar](repeating: 0, count: size)
            if case .found(let value) = buffer.withUnsafeMutableBufferPointer({ body($0) }) { return value }
            size *= 2
        }
        return nil
    }
}
