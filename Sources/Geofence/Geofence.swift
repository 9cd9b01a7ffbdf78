// Geofence
