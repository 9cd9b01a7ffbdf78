print("checkin")
