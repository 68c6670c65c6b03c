#include <gtest/gtest.h>

#include "auth/kdf.h"
#include "tests/unit/auth/hex_util.h"

namespace daxsmbd::auth {
namespace {

using protocol::Dialect;
using test::hex;
using test::unhex;
using test::view;

// "SMB 2 and SMB 3 security in Windows 10: the anatomy of signing and cryptographic keys"
// (Microsoft Open Specifications blog), appendix "Key derivation example for SMB 3.0
// multichannel". The blog lists the client's keys: its EncryptionKey is the server's
// DecryptionKey (client -> server) and vice versa.
TEST(Kdf, Smb30MicrosoftVector) {
    auto sk = unhex("7CD451825D0450D235424E44BA6E78CC");
    auto k = derive_session_keys(Dialect::Smb300, cipher_id::kAes128Ccm, view(sk), {}, {});
    EXPECT_EQ(hex(k.signing_key), "0b7e9c5cac36c0f6ea9ab275298cedce");
    EXPECT_EQ(hex(k.encryption_key_s2c), "b0f0427f7ceb416d1d9dcc0cd4f99447");
    EXPECT_EQ(hex(k.decryption_key_c2s), "fad27796665b313ebb578f388632b4f7");
    EXPECT_EQ(hex(k.application_key), "bb23a4575aa26c721af525af15a87b4f");
    // Second channel: Channel.SigningKey from the binding authentication's key.
    auto sk2 = unhex("4E01A2B313BCF660CC250BEF021AEDE6");
    EXPECT_EQ(hex(derive_channel_signing_key(Dialect::Smb300, view(sk2), {})),
              "ba1a17dbbfec349bca105563d598952f");
}

constexpr const char* kPreauth311 =
    "0DD13628CC3ED218EF9DF9772D436D0887AB9814BFAE63A80AA845F36909DB79"
    "28622DDDAD522D9751640A459762C5A9D6BB084CBB3CE6BDADEF5D5BCE3C6C01";

// Same blog, "Key derivation example for SMB 3.1.1 multichannel".
TEST(Kdf, Smb311MicrosoftVector) {
    auto sk = unhex("270E1BA896585EEB7AF3472D3B4C75A7");
    auto h = unhex(kPreauth311);
    auto k =
        derive_session_keys(Dialect::Smb311, cipher_id::kAes128Gcm, view(sk), view(sk), view(h));
    EXPECT_EQ(hex(k.signing_key), "73fe7a9a77bef0bde49c650d8ccb5f76");
    EXPECT_EQ(hex(k.encryption_key_s2c), "e2af0dcefac68da71a0dfbd0d1350d74");
    EXPECT_EQ(hex(k.decryption_key_c2s), "629bcbc54422a0f572b97f45989b6073");
    EXPECT_EQ(hex(k.application_key), "6d7ad7954e9ec61e907b4d473dc178ff");
    EXPECT_EQ(hex(derive_channel_signing_key(Dialect::Smb311, view(sk), view(h))),
              "73fe7a9a77bef0bde49c650d8ccb5f76");
}

// "SMB 3.1.1 Encryption in Windows 10" (Microsoft Open Specifications blog), appendix A.1.
TEST(Kdf, Smb311EncryptionBlogVector) {
    auto sk = unhex("419FDDF34C1E001909D362AE7FB6AF79");
    auto h = unhex(
        "B23F3CBFD69487D9832B79B1594A367CDD950909B774C3A4C412B4FCEA9EDDDBA7DB256BA2EA30E9"
        "77F11F9B113247578E0E915C6D2A513B8F2FCA5707DC8770");
    auto k = derive_session_keys(Dialect::Smb311, cipher_id::kAes128Gcm, view(sk), {}, view(h));
    EXPECT_EQ(hex(k.signing_key), "8765949dfeaee105ce9118b45be988f0");
    EXPECT_EQ(hex(k.encryption_key_s2c), "748c50868c90f302962a5c35f5f9a8bf");
    EXPECT_EQ(hex(k.decryption_key_c2s), "a2f5e80e5d59103034f32e52f698e5ec");
    EXPECT_EQ(hex(k.application_key), "099d610789fbe82055b313601c3e8cc4");
}

// AES-256: L = 256 and Ki = FullSessionKey for the cipher keys only. No published vector;
// expected values computed with python3 hmac/hashlib:
//   hmac.new(ki, b"\0\0\0\1" + label + b"\0" + ctx + (256).to_bytes(4, "big"), sha256)
TEST(Kdf, Smb311Aes256UsesFullKeyAnd256Bits) {
    auto sk = unhex("270E1BA896585EEB7AF3472D3B4C75A7");
    ByteVector full;
    for (int i = 0x20; i < 0x40; ++i)
        full.push_back(std::byte(i));
    auto h = unhex(kPreauth311);
    auto k =
        derive_session_keys(Dialect::Smb311, cipher_id::kAes256Gcm, view(sk), view(full), view(h));
    EXPECT_EQ(hex(k.encryption_key_s2c),
              "f9966992c8f66ae39552c75524324b5a48d4288d1bafb99378622f14ba492b35");
    EXPECT_EQ(hex(k.decryption_key_c2s),
              "81f58d11b8a0a1a1b632f5dab11a0c8fe716592c18644ef50ebe2995eed48ee8");
    // Signing and application keys stay 128-bit and keyed with the 16-byte session key.
    EXPECT_EQ(hex(k.signing_key), "73fe7a9a77bef0bde49c650d8ccb5f76");
    EXPECT_EQ(hex(k.application_key), "6d7ad7954e9ec61e907b4d473dc178ff");
    // Without a full key (NTLM), the 16-byte session key is Ki.
    auto k16 = derive_session_keys(Dialect::Smb311, cipher_id::kAes256Ccm, view(sk), {}, view(h));
    EXPECT_EQ(hex(k16.encryption_key_s2c),
              "35952fed051bf2471af5f7acc63674b887a54b47af46959f7caff1ce537d7419");
}

TEST(Kdf, Smb2xHasNoKdf) {
    auto sk = unhex("00112233445566778899aabbccddeeff");
    auto k = derive_session_keys(Dialect::Smb210, 0, view(sk), {}, {});
    EXPECT_EQ(hex(k.signing_key), "00112233445566778899aabbccddeeff");
    EXPECT_TRUE(k.encryption_key_s2c.empty());
    EXPECT_TRUE(k.decryption_key_c2s.empty());
}

TEST(Kdf, SmbSessionKeyTruncatesAndPads) {
    auto k32 = unhex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    EXPECT_EQ(hex(smb_session_key(view(k32))), "000102030405060708090a0b0c0d0e0f");
    auto k8 = unhex("0102030405060708");
    EXPECT_EQ(hex(smb_session_key(view(k8))), "01020304050607080000000000000000");
}

// The preauth hash chain of the 3.1.1 example in the "anatomy" blog: NEGOTIATE request and
// response update the connection hash; the session then continues from it with both
// SESSION_SETUP legs except the final response.
TEST(PreauthHash, MicrosoftChain) {
    PreauthHash h;
    auto neg_req = unhex(
        "FE534D4240000100000000000000800000000000000000000100000000000000FFFE000000000000"
        "00000000000000000000000000000000000000000000000024000500000000003F000000ECD86F32"
        "6276024F9F7752B89BB33F3A70000000020000000202100200030203110300000100260000000000"
        "010020000100FA49E6578F1F3A9F4CD3E9CC14A67AA884B3D05844E0E5A118225C15887F32FF0000"
        "0200060000000000020002000100");
    h.update(view(neg_req));
    EXPECT_EQ(hex(h.value()),
              "dd94efc5321bb618a2e208ba8920d2f422992526947a409b5037de1e0fe8c7362b8c47122594cde0"
              "ce26aa9dfc8bcdbde0621957672623351a7540f1e54a0426");
    auto neg_resp = unhex(
        "FE534D4240000100000000000000010001000000000000000100000000000000FFFE000000000000"
        "000000000000000000000000000000000000000000000000410001001103020039CBCAF329714942"
        "BDCE5D60F09AB3FB2F000000000080000000800000008000D8DAE5ADCBAED00109094AB095AED001"
        "80004001C00100006082013C06062B0601050502A08201303082012CA01A3018060A2B0601040182"
        "3702021E060A2B06010401823702020AA282010C048201084E45474F455854530100000000000000"
        "60000000700000007C7CC0FD06D6362D02DDE1CF343BFE292900F49750B4AA97934D9C4296B26E51"
        "FD370471B235E15A50DAE15BD5489C87000000000000000060000000010000000000000000000000"
        "5C33530DEAF90D4DB2EC4AE3786EC3084E45474F4558545303000000010000004000000098000000"
        "7C7CC0FD06D6362D02DDE1CF343BFE295C33530DEAF90D4DB2EC4AE3786EC3084000000058000000"
        "3056A05430523027802530233121301F06035504031318546F6B656E205369676E696E6720507562"
        "6C6963204B65793027802530233121301F06035504031318546F6B656E205369676E696E67205075"
        "626C6963204B6579010026000000000001002000010060A3C3B95C3C7CCD51EC536648D9B3AC74C4"
        "83CA5B65385A251117BEB30712E50000020004000000000001000200");
    // Gathered in two fragments: must equal hashing the message in one piece.
    Bytes nr = view(neg_resp);
    Bytes frags[2] = {nr.first(100), nr.subspan(100)};
    h.update(frags);
    EXPECT_EQ(hex(h.value()),
              "324bfa92a4f3a190e466ebea08d9c110dc88bfed758d9846ecc6f541cc1d02ae3c94a79f36011e99"
              "7e13f841b91b50957ad07b19c8e2539c0b23fdae09d2c513");
    PreauthHash session(h.value());
    session.update(view(
        unhex("FE534D4240000100000000000100800000000000000000000200000000000000FFFE000000000000"
              "00000000000000000000000000000000000000000000000019000001010000000000000058004A00"
              "0000000000000000604806062B0601050502A03E303CA00E300C060A2B06010401823702020AA22A"
              "04284E544C4D5353500001000000978208E200000000000000000000000000000000060380250000"
              "000F")));
    EXPECT_EQ(hex(session.value()),
              "ac0b0f2b9986257700365e416d142a6edc96df03594a19e52a15f6bd0d041cd5d432f8ed42c55e33"
              "197a50c9ec00f1462b50c592211b1471a04b56088fdfd5f9");
    session.update(view(
        unhex("FE534D4240000100160000C00100010001000000000000000200000000000000FFFE000000000000"
              "190000000010000000000000000000000000000000000000090000004800B300A181B03081ADA003"
              "0A0101A10C060A2B06010401823702020AA281970481944E544C4D53535000020000000C000C0038"
              "00000015828AE20D1D8BA31179D008000000000000000050005000440000000A0092270000000F53"
              "005500540033003100310002000C0053005500540033003100310001000C00530055005400330031"
              "00310004000C0053005500540033003100310003000C0053005500540033003100310007000800A1"
              "A1F5ADCBAED00100000000")));
    EXPECT_EQ(hex(session.value()),
              "2729e3440dfddd839e37193f6e8f20c20cefb3469e453a70cd980eec06b8835740a7376008563336"
              "4c8989895ece81bf102deeb14d4b7d48afa76901a7a38387");
    session.update(view(
        unhex("FE534D4240000100000000000100800000000000000000000300000000000000FFFE000000000000"
              "1900000000100000000000000000000000000000000000001900000101000000000000005800CF01"
              "0000000000000000A18201CB308201C7A0030A0101A28201AA048201A64E544C4D53535000030000"
              "001800180090000000EE00EE00A80000000C000C00580000001A001A0064000000120012007E0000"
              "001000100096010000158288E2060380250000000FECAC77A5F385A8BF9C38C706EEEDDCD3530055"
              "005400330031003100610064006D0069006E006900730074007200610074006F0072004400520049"
              "0056004500520033003100310000000000000000000000000000000000000000000000000063078E"
              "B639FE03E20A231C3AE3BF23080101000000000000A1A1F5ADCBAED001BC4AD05F223CC90F000000"
              "0002000C0053005500540033003100310001000C0053005500540033003100310004000C00530055"
              "00540033003100310003000C0053005500540033003100310007000800A1A1F5ADCBAED001060004"
              "00020000000800300030000000000000000000000000300000B61FEFCAA857EA57BF1EDCEBF8974B"
              "8E0EBA5A6DFD9D07A31D11B548F8C9D0CC0A00100000000000000000000000000000000000090016"
              "0063006900660073002F005300550054003300310031000000000000000000000000003B9BDFF38F"
              "5EE8F9663F11A0F4C03A78A31204100100000063775A9A5FD97F0600000000")));
    EXPECT_EQ(hex(session.value()), hex(unhex(kPreauth311)));
}

TEST(Kdf, Sp800108LabelsIncludeNul) {
    // The KDF adds the 0x00 separator itself: a label passed without its NUL gives a different
    // key than the MS-SMB2 table, which is why derive_session_keys passes sizeof(literal).
    auto sk = unhex("7CD451825D0450D235424E44BA6E78CC");
    auto with_nul = sp800_108_hmac_sha256(view(sk), protocol::as_bytes("SMB2AESCMAC", 12),
                                          protocol::as_bytes("SmbSign", 8), 128);
    EXPECT_EQ(hex(with_nul), "0b7e9c5cac36c0f6ea9ab275298cedce");
    auto without = sp800_108_hmac_sha256(view(sk), protocol::as_bytes("SMB2AESCMAC", 11),
                                         protocol::as_bytes("SmbSign", 7), 128);
    EXPECT_NE(hex(without), hex(with_nul));
}

}  // namespace
}  // namespace daxsmbd::auth
