// The payload size that decides a request's credit charge (MS-SMB2 3.3.5.2.5: "the
// CreditCharge ... is greater than or equal to (max(SendPayloadSize, Expected ResponsePayloadSize)
// - 1) / 65536 + 1"), read from the fixed part of a request element before it is parsed in
// full: the dispatcher charges credits before a handler runs. Commands whose payload cannot
// exceed 64 KiB have none (0).
#pragma once

#include <cstdint>

#include "protocol/bytes.h"
#include "protocol/header.h"

namespace daxsmbd::protocol {

// `elem` is a whole request element, header included; a field beyond its end reads as 0 (the
// handler's parser then rejects the short element).
uint64_t read_payload_size(Bytes elem);             // READ: Length
uint64_t write_payload_size(Bytes elem);            // WRITE: max(Length, RemainingBytes)
uint64_t ioctl_payload_size(Bytes elem);            // IOCTL: max(InputCount, MaxOutputResponse)
uint64_t query_directory_payload_size(Bytes elem);  // OutputBufferLength
uint64_t change_notify_payload_size(Bytes elem);    // OutputBufferLength
uint64_t query_info_payload_size(Bytes elem);       // OutputBufferLength
uint64_t set_info_payload_size(Bytes elem);         // BufferLength

}  // namespace daxsmbd::protocol
