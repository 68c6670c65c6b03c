// NtStatus: the one error vocabulary of daxsmbd. Values from MS-ERREF 2.3.1.
#pragma once

#include <cstdint>
#include <string_view>

namespace daxsmbd {

enum class NtStatus : uint32_t {
    Success = 0x00000000,
    Pending = 0x00000103,
    OplockBreakInProgress = 0x00000108,
    NotifyCleanup = 0x0000010B,
    NotifyEnumDir = 0x0000010C,
    BufferOverflow = 0x80000005,
    NoMoreFiles = 0x80000006,
    NoMoreEas = 0x80000012,
    InvalidEaName = 0x80000013,
    EaListInconsistent = 0x80000014,
    StoppedOnSymlink = 0x8000002D,
    Unsuccessful = 0xC0000001,
    NotImplemented = 0xC0000002,
    InvalidInfoClass = 0xC0000003,
    InfoLengthMismatch = 0xC0000004,
    InvalidHandle = 0xC0000008,
    InvalidParameter = 0xC000000D,
    NoSuchFile = 0xC000000F,
    InvalidDeviceRequest = 0xC0000010,
    EndOfFile = 0xC0000011,
    MoreProcessingRequired = 0xC0000016,
    NoMemory = 0xC0000017,
    InvalidViewSize = 0xC000001F,
    AccessDenied = 0xC0000022,
    BufferTooSmall = 0xC0000023,
    ObjectTypeMismatch = 0xC0000024,
    DiskCorruptError = 0xC0000032,
    ObjectNameInvalid = 0xC0000033,
    ObjectNameNotFound = 0xC0000034,
    ObjectNameCollision = 0xC0000035,
    ObjectPathInvalid = 0xC0000039,
    ObjectPathNotFound = 0xC000003A,
    ObjectPathSyntaxBad = 0xC000003B,
    SharingViolation = 0xC0000043,
    EasNotSupported = 0xC000004F,
    EaTooLarge = 0xC0000050,
    NonexistentEaEntry = 0xC0000051,
    NoEasOnFile = 0xC0000052,
    EaCorruptError = 0xC0000053,
    FileLockConflict = 0xC0000054,
    LockNotGranted = 0xC0000055,
    DeletePending = 0xC0000056,
    InvalidOwner = 0xC000005A,
    InvalidPrimaryGroup = 0xC000005B,
    PrivilegeNotHeld = 0xC0000061,
    NoSuchUser = 0xC0000064,
    WrongPassword = 0xC000006A,
    LogonFailure = 0xC000006D,
    AccountRestriction = 0xC000006E,
    PasswordExpired = 0xC0000071,
    AccountDisabled = 0xC0000072,
    NoneMapped = 0xC0000073,
    InvalidSecurityDescr = 0xC0000079,
    RangeNotLocked = 0xC000007E,
    DiskFull = 0xC000007F,
    InsufficientResources = 0xC000009A,
    MediaWriteProtected = 0xC00000A2,
    BadImpersonationLevel = 0xC00000A5,
    IoTimeout = 0xC00000B5,
    FileForcedClosed = 0xC00000B6,
    FileIsADirectory = 0xC00000BA,
    NotSupported = 0xC00000BB,
    InvalidNetworkResponse = 0xC00000C3,
    NetworkNameDeleted = 0xC00000C9,
    BadNetworkName = 0xC00000CC,
    TooManySessions = 0xC00000CE,
    RequestNotAccepted = 0xC00000D0,
    NotSameDevice = 0xC00000D4,
    InvalidOplockProtocol = 0xC00000E3,
    InternalError = 0xC00000E5,
    UnexpectedIoError = 0xC00000E9,
    DirectoryNotEmpty = 0xC0000101,
    NotADirectory = 0xC0000103,
    NameTooLong = 0xC0000106,
    FileCorruptError = 0xC0000102,
    Cancelled = 0xC0000120,
    CannotDelete = 0xC0000121,
    FileDeleted = 0xC0000123,
    FileClosed = 0xC0000128,
    InvalidLevel = 0xC0000148,
    PipeBroken = 0xC000014B,
    InvalidDeviceState = 0xC0000184,
    FsDriverRequired = 0xC000019C,
    ShortNamesNotEnabledOnVolume = 0xC000019F,
    InvalidLockRange = 0xC00001A1,
    NetworkSessionExpired = 0xC000035C,
    UserSessionDeleted = 0xC0000203,
    ConnectionDisconnected = 0xC000020C,
    TooManyOpenedFiles = 0xC000011F,
    NotFound = 0xC0000225,
    DuplicateObjectId = 0xC000022A,
    TooManyLinks = 0xC0000265,
    NotAReparsePoint = 0xC0000275,
    RequestOutOfSequence = 0xC000042A,
    FileNotAvailable = 0xC0000467,
    BadData = 0xC000090B,
    InvalidSignature = 0xC000A000,
    NoPreauthIntegrityHashOverlap = 0xC05D0000,
    SmbBadClusterDialect = 0xC05D0001,
};

constexpr uint32_t to_u32(NtStatus s) {
    return static_cast<uint32_t>(s);
}

// True for error and warning severities that make SMB2 send an ERROR body (MS-SMB2 3.3.4.4);
// callers special-case the documented exceptions (MORE_PROCESSING on SESSION_SETUP, ...).
constexpr bool is_error(NtStatus s) {
    return (to_u32(s) >> 30) == 3;
}
constexpr bool is_warning(NtStatus s) {
    return (to_u32(s) >> 30) == 2;
}

// "STATUS_ACCESS_DENIED" style name for logs; hex text for values without a name here.
std::string_view status_name(NtStatus s);

}  // namespace daxsmbd
